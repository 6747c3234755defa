"""The Numba loops behind dtf.kernels.cpu.norm (fused batch norm and its gradient).

Every loop takes a [rows, channels] matrix (channels innermost, so each row updates the
channels' accumulators side by side, which vectorizes) and a range of rows, so the caller
can hand row chunks to the intra-op threads; sums go to row ``k`` of a [chunks, channels]
partial array, added up in chunk order by the caller (the same result whatever thread ran
what). Sums are float64: float32 accumulators over 65,536 rows lost 3-4 digits.

The loops run over the flat elements in blocks of one ``period`` (a multiple of the
channel count near ``TILE``), against per-channel vectors tiled to that length, and fold
the period back to channels at the end: a loop over the channels alone (16 in the
ResNet step) is shorter than what LLVM's vectorized loop takes in one iteration (64
floats), so it ran in the scalar remainder. On 65,536 x 16 float32, one thread, busy
machine: the forward's sums 0.29 -> 0.18 ms, its normalizing pass 0.21 -> 0.13; the
gradient's sums 0.38 -> 0.22-0.30 (0.53 -> 0.27-0.35 with the ReluGrad mask); its last
pass, which reads three arrays and writes one, stays at ~0.4 (memory-bound).
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as u  # an index that is never negative: no wraparound check

_JIT = dict(cache=True, nogil=True)


TILE = 256  # elements per block: a few vector iterations, and the tiled vectors stay in L1


@njit(cache=True, nogil=True, inline="always")
def _period(c):
    return c * max(1, TILE // c)


@njit(cache=True, nogil=True, inline="always")
def _tiled(v, n, dtype):
    """v (one value per channel) repeated to length n, in ``dtype``."""
    c = v.size
    out = np.empty(n, dtype)
    for e in range(n):
        out[e] = v[e % c]
    return out


@njit(cache=True, nogil=True, inline="always")
def _fold(acc, c):
    """The per-channel sums of a period-long accumulator."""
    out = np.zeros(c, np.float64)
    for e in range(acc.size):
        out[e % c] += acc[e]
    return out


@njit(cache=True, nogil=True, inline="always")
def _masked(g, f, masked):
    """dy: g, or ReluGrad(g, f) = g where f > 0 else g * 0 (NaN stays NaN) when masked."""
    if masked and not f > 0:
        return g * 0
    return g


@njit(**_JIT)
def _stats(x, r0, r1, shift, sums, squares, k):
    """Sums of (x - shift) and of its square per channel over rows [r0, r1). The shift
    (any value near the mean: the first row's) keeps E[d^2] - E[d]^2 from cancelling."""
    c = x.shape[1]
    n = _period(c)
    xf = x.reshape(-1)
    sh = _tiled(shift, n, np.float64)
    s = np.zeros(n, np.float64)
    q = np.zeros(n, np.float64)
    e0, e1 = r0 * c, r1 * c
    for base in range(e0, e1, n):
        for e in range(min(n, e1 - base)):
            d = np.float64(xf[u(base + e)]) - sh[e]
            s[e] += d
            q[e] += d * d
    sums[k, :] = _fold(s, c)
    squares[k, :] = _fold(q, c)


@njit(**_JIT)
def _scale_shift(x, m, a, b, h, residual, y, r0, r1, relu):
    """y = (x - m) * a + b per channel over rows [r0, r1), plus h when ``residual``, then
    max(., 0) when ``relu`` (NaN stays NaN, as under Relu)."""
    c = x.shape[1]
    n = _period(c)
    t = x.dtype
    mt, at, bt = _tiled(m, n, t), _tiled(a, n, t), _tiled(b, n, t)
    xf, hf, yf = x.reshape(-1), h.reshape(-1), y.reshape(-1)
    e0, e1 = r0 * c, r1 * c
    for base in range(e0, e1, n):
        for e in range(min(n, e1 - base)):
            i = u(base + e)
            v = (xf[i] - mt[e]) * at[e] + bt[e]
            if residual:
                v += hf[i]
            if relu:
                v = 0.0 if v <= 0 else v
            yf[i] = v


@njit(**_JIT)
def _grad_stats(dy, f, masked, x, mean, r0, r1, sums, dots, k):
    """Sums of dy and of dy * (x - mean) per channel over rows [r0, r1); dy masked by the
    relu output ``f`` first when ``masked`` (ReluGrad fused in: see dtf.runtime.fusion_norm)."""
    c = x.shape[1]
    n = _period(c)
    mt = _tiled(mean, n, np.float64)
    gf, ff, xf = dy.reshape(-1), f.reshape(-1), x.reshape(-1)
    s = np.zeros(n, np.float64)
    q = np.zeros(n, np.float64)
    e0, e1 = r0 * c, r1 * c
    for base in range(e0, e1, n):
        for e in range(min(n, e1 - base)):
            i = u(base + e)
            g = np.float64(_masked(gf[i], ff[i], masked))
            s[e] += g
            q[e] += g * (np.float64(xf[i]) - mt[e])
    sums[k, :] = _fold(s, c)
    dots[k, :] = _fold(q, c)


@njit(**_JIT)
def _grad_apply(dy, f, masked, x, m, c1, c2, c3, dx, r0, r1):
    """dx = c1 * dy + c2 * (x - m) + c3 per channel over rows [r0, r1): batch norm's input
    gradient with its per-channel constants folded (see norm.py); dy masked as above."""
    c = x.shape[1]
    n = _period(c)
    t = x.dtype
    mt, c1t, c2t, c3t = _tiled(m, n, t), _tiled(c1, n, t), _tiled(c2, n, t), _tiled(c3, n, t)
    gf, ff, xf, df = dy.reshape(-1), f.reshape(-1), x.reshape(-1), dx.reshape(-1)
    e0, e1 = r0 * c, r1 * c
    for base in range(e0, e1, n):
        for e in range(min(n, e1 - base)):
            i = u(base + e)
            g = _masked(gf[i], ff[i], masked)
            df[i] = c1t[e] * g + c2t[e] * (xf[i] - mt[e]) + c3t[e]
