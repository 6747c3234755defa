"""The Numba loops behind dtf.kernels.cpu.nn (average pooling, softmax cross-entropy,
ReluGrad, top-k). Imported only when a plan first needs one of those kernels, so programs that
never pool or convolve never load the Numba compiler."""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as u  # an index that is never negative: no wraparound check

_JIT = dict(cache=True, nogil=True)


# -- pooling ----------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _span(i, stride, pad, k, size):
    """[start, end) of the real inputs under window i: padding is never read."""
    start = i * stride - pad
    return max(start, 0), min(start + k, size)


@njit(**_JIT)
def _avg_pool_rows_into(x, out, t0, t1, kh, kw, sh, sw, pt, pl):
    """Output rows t0:t1 of ``out`` (zeroed by the caller; a row is one image's output
    line, n * oh of them): each pixel the mean of its window's real inputs."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    for t in range(t0, t1):
        b, i = t // oh, t % oh
        y0, y1 = _span(i, sh, pt, kh, h)
        for j in range(ow):
            x0, x1 = _span(j, sw, pl, kw, wd)
            acc = out[b, i, j]
            for y in range(y0, y1):
                for xx in range(x0, x1):
                    row = x[b, y, xx]
                    for ch in range(c):
                        acc[ch] += row[ch]
            count = (y1 - y0) * (x1 - x0)
            for ch in range(c):
                acc[ch] /= count


@njit(**_JIT)
def _avg_pool_grad_into(dy, dx, b0, b1, kh, kw, sh, sw, pt, pl):
    """dx[b0:b1] (zeroed by the caller) += each output pixel's dy / its window's count,
    spread over the window. The share is divided once per pixel, not once per element it
    reaches: the same values (dy / count, added in the same order), kh * kw times fewer
    divisions; the rows of dy and dx are taken once per pixel and per tap."""
    n, oh, ow, c = dy.shape
    h, wd = dx.shape[1], dx.shape[2]
    share = np.empty(c, dy.dtype)
    for b in range(b0, b1):
        for i in range(oh):
            y0, y1 = _span(i, sh, pt, kh, h)
            for j in range(ow):
                x0, x1 = _span(j, sw, pl, kw, wd)
                count = (y1 - y0) * (x1 - x0)
                g = dy[b, i, j]
                for ch in range(c):
                    share[ch] = g[ch] / count
                for y in range(y0, y1):
                    for xx in range(x0, x1):
                        row = dx[b, y, xx]
                        for ch in range(c):
                            row[ch] += share[ch]


# -- softmax cross-entropy ------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _softmax_row(logits, r, backprop):
    """Writes softmax(logits[r]) into backprop[r]; returns log(sum(exp(x - max))) and max."""
    m = logits[r, 0]
    for k in range(logits.shape[1]):
        m = max(m, logits[r, k])
    s = 0.0
    for k in range(logits.shape[1]):
        e = np.exp(logits[r, k] - m)
        backprop[r, k] = e
        s += e
    for k in range(logits.shape[1]):
        backprop[r, k] /= s
    return np.log(s), m


@njit(**_JIT)
def _softmax_xent(logits, labels):
    n, classes = logits.shape
    loss = np.empty(n, logits.dtype)
    backprop = np.empty_like(logits)
    for r in range(n):
        lse, m = _softmax_row(logits, r, backprop)
        acc = 0.0
        for k in range(classes):
            acc += labels[r, k] * (lse - (logits[r, k] - m))
            backprop[r, k] -= labels[r, k]
        loss[r] = acc
    return loss, backprop


@njit(**_JIT)
def _sparse_softmax_xent(logits, labels):
    """(loss, backprop, -1), or (_, _, r) where labels[r] is no class index: nothing is
    computed then, and the caller raises."""
    n, classes = logits.shape
    loss = np.empty(n, logits.dtype)
    backprop = np.empty_like(logits)
    for r in range(n):
        if labels[r] < 0 or labels[r] >= classes:
            return loss, backprop, r
    for r in range(n):
        lse, m = _softmax_row(logits, r, backprop)
        k = labels[r]
        loss[r] = lse - (logits[r, k] - m)
        backprop[r, k] -= 1
    return loss, backprop, -1


# -- activation gradients ---------------------------------------------------------------------
@njit(**_JIT)
def _relu_grad(g, f):
    """g * (f > 0) in one pass over same-shape contiguous arrays (numpy needs a bool
    temporary and a mixed-type multiply: ~3x slower on a 64x128 batch). Where f <= 0 the
    result is g * 0, not 0, so nan and inf gradients still give nan."""
    out = np.empty(g.shape, g.dtype)
    _relu_grad_into(g.reshape(-1), f.reshape(-1), out.reshape(-1), 0, g.size)
    return out


@njit(**_JIT)
def _relu_grad_into(gf, ff, of, s0, s1):
    """_relu_grad on elements [s0, s1) of flat arrays, into ``of``: one slice of a large
    tensor for one intra-op thread. The index is unsigned: through ``range(s0, s1)``
    Numba checks each index for wraparound and LLVM does not vectorize the loop (1.8 ms
    against 0.17 on 1M floats)."""
    for e in range(s1 - s0):
        i = u(s0 + e)
        of[i] = gf[i] if ff[i] > 0 else gf[i] * 0


# -- top-k ---------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _ahead(a, b):
    """Whether value a sorts before value b in TopKV2's order: larger first, NaN above
    everything (as numpy's sort places it); equal values are left to their indices."""
    if a != a:
        return b == b
    return b == b and a > b


@njit(**_JIT)
def top_k_rows(x, k, r0, r1, values, indices):
    """Rows r0..r1 of the k largest of each row of the [rows, n] ``x`` (larger first, equal
    values by lower index, NaN first: the reference's stable sort), by insertion into a
    sorted list of k: elements come in index order, so an equal value never moves ahead of
    one already kept."""
    n = x.shape[1]
    for r in range(r0, r1):
        count = 0
        for j in range(n):
            v = x[r, j]
            if count == k and not _ahead(v, values[r, k - 1]):
                continue
            pos = count if count < k else k - 1
            while pos > 0 and _ahead(v, values[r, pos - 1]):
                values[r, pos] = values[r, pos - 1]
                indices[r, pos] = indices[r, pos - 1]
                pos -= 1
            values[r, pos] = v
            indices[r, pos] = j
            if count < k:
                count += 1
