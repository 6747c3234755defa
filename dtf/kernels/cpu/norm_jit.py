"""The Numba loops behind dtf.kernels.cpu.norm (fused batch norm and its gradient).

Every loop takes a [rows, channels] matrix (channels innermost, so each row updates the
channels' accumulators side by side, which vectorizes) and a range of rows, so the caller
can hand row chunks to the intra-op threads; sums go to row ``k`` of a [chunks, channels]
partial array, added up in chunk order by the caller (the same result whatever thread ran
what). Sums are float64: float32 accumulators over 65,536 rows lost 3-4 digits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def _stats(x, r0, r1, shift, sums, squares, k):
    """Sums of (x - shift) and of its square per channel over rows [r0, r1). The shift
    (any value near the mean: the first row's) keeps E[d^2] - E[d]^2 from cancelling."""
    c = x.shape[1]
    s = np.zeros(c, np.float64)
    q = np.zeros(c, np.float64)
    for r in range(r0, r1):
        for j in range(c):
            d = np.float64(x[r, j]) - shift[j]
            s[j] += d
            q[j] += d * d
    sums[k, :] = s
    squares[k, :] = q


@njit(**_JIT)
def _scale_shift(x, m, a, b, h, residual, y, r0, r1, relu):
    """y = (x - m) * a + b per channel over rows [r0, r1), plus h when ``residual``, then
    max(., 0) when ``relu`` (NaN stays NaN, as under Relu)."""
    c = x.shape[1]
    for r in range(r0, r1):
        for j in range(c):
            v = (x[r, j] - m[j]) * a[j] + b[j]
            if residual:
                v += h[r, j]
            if relu:
                v = 0.0 if v <= 0 else v
            y[r, j] = v


@njit(cache=True, nogil=True, inline="always")
def _masked(g, f, masked):
    """dy: g, or ReluGrad(g, f) = g where f > 0 else g * 0 (NaN stays NaN) when masked."""
    if masked and not f > 0:
        return g * 0
    return g


@njit(**_JIT)
def _grad_stats(dy, f, masked, x, mean, r0, r1, sums, dots, k):
    """Sums of dy and of dy * (x - mean) per channel over rows [r0, r1); dy masked by the
    relu output ``f`` first when ``masked`` (ReluGrad fused in: see dtf.runtime.fusion_norm)."""
    c = x.shape[1]
    s = np.zeros(c, np.float64)
    q = np.zeros(c, np.float64)
    for r in range(r0, r1):
        for j in range(c):
            g = np.float64(_masked(dy[r, j], f[r, j], masked))
            s[j] += g
            q[j] += g * (np.float64(x[r, j]) - mean[j])
    sums[k, :] = s
    dots[k, :] = q


@njit(**_JIT)
def _grad_apply(dy, f, masked, x, m, c1, c2, c3, dx, r0, r1):
    """dx = c1 * dy + c2 * (x - m) + c3 per channel over rows [r0, r1): batch norm's input
    gradient with its per-channel constants folded (see norm.py); dy masked as above."""
    c = x.shape[1]
    for r in range(r0, r1):
        for j in range(c):
            g = _masked(dy[r, j], f[r, j], masked)
            dx[r, j] = c1[j] * g + c2[j] * (x[r, j] - m[j]) + c3[j]
