"""CPU kernels of the nn ops that beat numpy: the two conv2d backprops, max/avg pooling and
their gradients, and the softmax cross-entropies. Float32 and float64 only; the numpy
reference serves every other dtype, and Conv2D itself (see below).

Every loop is an njit function compiled on first call and cached on disk. Kernels release
the GIL so the executor's threads overlap them, but are serial: on 2 shared cores a
parallel=True (prange) version measured worse, its median dominated by waiting for a busy
second core (AvgPool on 32x28x28x32: 13 ms parallel vs 0.6 ms serial; softmax cross-entropy
on 256x10: 7.7 ms vs 0.03 ms). Geometry and input validation stay in Python, shared with
the reference, so both paths reject the same inputs the same way.

Convolutions multiply with BLAS; Numba only gathers patches (im2col) or scatters them back
(col2im). Measured on batch 32, 28x28x16 -> 32 3x3 filters, SAME, float32, 2 cores (best of
20): forward, a direct Numba loop 11-13 ms, Numba im2col + matmul 10-11 ms, the numpy
reference's 9 shifted matmuls 7-8 ms, so Conv2D runs on the reference. Backprop input:
col2im + matmul 7-8 ms vs numpy 11-12 ms (direct Numba loop 16-28 ms); backprop filter:
im2col + matmul 8-14 ms vs numpy 16 ms (float64: 13 vs 38 ms).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dtf.framework import dtypes
from dtf.kernels.reference.nn import (check_conv_shapes, check_sparse_xent, check_xent_shapes,
                                      spatial_geometry)
from dtf.kernels.registry import register_kernel

FLOATS = (dtypes.float32, dtypes.float64)
_JIT = dict(cache=True, nogil=True)


# -- conv2d: Numba moves patches, BLAS multiplies ---------------------------------------------------
@njit(**_JIT)
def _im2col(x, kh, kw, sh, sw, oh, ow, pt, pl):
    """Rows (b, i, j), columns (p, q, c): the input patch each output pixel reads; padding
    stays zero."""
    n, h, wd, ci = x.shape
    cols = np.zeros((n * oh * ow, kh * kw * ci), x.dtype)
    for t in range(n * oh):
        b, i = t // oh, t % oh
        for j in range(ow):
            row = cols[t * ow + j]
            for p in range(kh):
                y = i * sh + p - pt
                if y < 0 or y >= h:
                    continue
                for q in range(kw):
                    xx = j * sw + q - pl
                    if 0 <= xx < wd:
                        row[(p * kw + q) * ci:(p * kw + q + 1) * ci] = x[b, y, xx]
    return cols


@njit(**_JIT)
def _col2im(cols, n, h, wd, ci, kh, kw, sh, sw, oh, ow, pt, pl):
    """The adjoint of _im2col: adds each patch entry back to the input pixel it came from."""
    dx = np.zeros((n, h, wd, ci), cols.dtype)
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                row = cols[(b * oh + i) * ow + j]
                for p in range(kh):
                    y = i * sh + p - pt
                    if y < 0 or y >= h:
                        continue
                    for q in range(kw):
                        xx = j * sw + q - pl
                        if 0 <= xx < wd:
                            dx[b, y, xx] += row[(p * kw + q) * ci:(p * kw + q + 1) * ci]
    return dx


# -- pooling ----------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, inline="always")
def _span(i, stride, pad, k, size):
    """[start, end) of the real inputs under window i: padding is never read."""
    start = i * stride - pad
    return max(start, 0), min(start + k, size)


@njit(**_JIT)
def _max_pool(x, kh, kw, sh, sw, oh, ow, pt, pl):
    n, h, wd, c = x.shape
    out = np.empty((n, oh, ow, c), x.dtype)
    for t in range(n * oh):
        b, i = t // oh, t % oh
        y0, y1 = _span(i, sh, pt, kh, h)
        for j in range(ow):
            x0, x1 = _span(j, sw, pl, kw, wd)
            acc = out[b, i, j]
            acc[:] = x[b, y0, x0]
            for y in range(y0, y1):
                for xx in range(x0, x1):
                    for ch in range(c):
                        acc[ch] = max(acc[ch], x[b, y, xx, ch])
    return out


@njit(**_JIT)
def _max_pool_grad(x, dy, kh, kw, sh, sw, pt, pl):
    # Scatter to the first maximum of each window (row-major), as TF's CPU kernel does.
    n, h, wd, c = x.shape
    _, oh, ow, _ = dy.shape
    dx = np.zeros(x.shape, dy.dtype)
    for b in range(n):
        for i in range(oh):
            y0, y1 = _span(i, sh, pt, kh, h)
            for j in range(ow):
                x0, x1 = _span(j, sw, pl, kw, wd)
                for ch in range(c):
                    by, bx = y0, x0
                    m = x[b, y0, x0, ch]
                    for y in range(y0, y1):
                        for xx in range(x0, x1):
                            if x[b, y, xx, ch] > m:
                                m = x[b, y, xx, ch]
                                by, bx = y, xx
                    dx[b, by, bx, ch] += dy[b, i, j, ch]
    return dx


@njit(**_JIT)
def _avg_pool(x, kh, kw, sh, sw, oh, ow, pt, pl):
    n, h, wd, c = x.shape
    out = np.zeros((n, oh, ow, c), x.dtype)
    for t in range(n * oh):
        b, i = t // oh, t % oh
        y0, y1 = _span(i, sh, pt, kh, h)
        for j in range(ow):
            x0, x1 = _span(j, sw, pl, kw, wd)
            acc = out[b, i, j]
            for y in range(y0, y1):
                for xx in range(x0, x1):
                    for ch in range(c):
                        acc[ch] += x[b, y, xx, ch]
            count = (y1 - y0) * (x1 - x0)
            for ch in range(c):
                acc[ch] /= count
    return out


@njit(**_JIT)
def _avg_pool_grad(dy, h, wd, kh, kw, sh, sw, pt, pl):
    n, oh, ow, c = dy.shape
    dx = np.zeros((n, h, wd, c), dy.dtype)
    for b in range(n):
        for i in range(oh):
            y0, y1 = _span(i, sh, pt, kh, h)
            for j in range(ow):
                x0, x1 = _span(j, sw, pl, kw, wd)
                count = (y1 - y0) * (x1 - x0)
                for y in range(y0, y1):
                    for xx in range(x0, x1):
                        for ch in range(c):
                            dx[b, y, xx, ch] += dy[b, i, j, ch] / count
    return dx


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
    n = logits.shape[0]
    loss = np.empty(n, logits.dtype)
    backprop = np.empty_like(logits)
    for r in range(n):
        lse, m = _softmax_row(logits, r, backprop)
        k = labels[r]
        loss[r] = lse - (logits[r, k] - m)
        backprop[r, k] -= 1
    return loss, backprop


# -- factories: attrs parsed once per plan, shapes checked in Python ---------------------------------
_c = np.ascontiguousarray


def _geometry(node, x_shape, k_hw):
    return spatial_geometry(x_shape[1:3], k_hw, node.attrs["strides"], node.attrs["padding"])


def _sizes(t):
    return tuple(int(d) for d in t)


# Patch matrices are built a few images at a time so they stay small (and in cache).
_PATCH_BYTES = 4 << 20


def _batch_chunks(n, patch_row_bytes):
    step = max(1, _PATCH_BYTES // max(patch_row_bytes, 1))
    return [slice(b, min(b + step, n)) for b in range(0, n, step)]


class _ConvGeometry:
    """What a conv backprop needs about one call: the im2col/col2im window arguments (filter
    size, strides, output size, top/left padding) and the batch chunks to build patches over."""

    def __init__(self, node, x_shape, w_shape, itemsize):
        check_conv_shapes(x_shape, w_shape)
        self.w_shape = w_shape
        (oh, ow), (pt, pl), _ = _geometry(node, x_shape, w_shape[:2])
        self.window = (w_shape[0], w_shape[1], *node.attrs["strides"][1:3], oh, ow, pt, pl)
        row = oh * ow * w_shape[0] * w_shape[1] * w_shape[2] * itemsize
        self.chunks = _batch_chunks(x_shape[0], row)

    def patches(self, x):
        return _im2col(_c(x), *self.window)

    def rows(self, t):
        """[b, oh, ow, out] -> [b * oh * ow, out]."""
        return _c(t).reshape(-1, self.w_shape[3])


@register_kernel("Conv2DBackpropInput", "CPU", dtypes=FLOATS, label="numba col2im + BLAS")
def conv2d_backprop_input(node):
    def compute(ctx, input_sizes, w, dy):
        shape = _sizes(input_sizes)
        g = _ConvGeometry(node, shape, w.shape, dy.itemsize)
        w2t = _c(w).reshape(-1, w.shape[3]).T
        dx = np.empty(shape, dy.dtype)
        for s in g.chunks:
            n = s.stop - s.start
            dx[s] = _col2im(g.rows(dy[s]) @ w2t, n, *shape[1:], *g.window)
        return dx

    return compute


@register_kernel("Conv2DBackpropFilter", "CPU", dtypes=FLOATS, label="numba im2col + BLAS")
def conv2d_backprop_filter(node):
    def compute(ctx, x, filter_sizes, dy):
        shape = _sizes(filter_sizes)
        g = _ConvGeometry(node, x.shape, shape, x.itemsize)
        dw = np.zeros((int(np.prod(shape[:3])), shape[3]), dy.dtype)
        for s in g.chunks:
            dw += g.patches(x[s]).T @ g.rows(dy[s])
        return dw.reshape(shape)

    return compute


def _pool_params(node, x_shape):
    """(kh, kw, sh, sw) and the output size and top/left padding of a pooling node."""
    kh, kw = node.attrs["ksize"][1:3]
    (oh, ow), (pt, pl), _ = _geometry(node, x_shape, (kh, kw))
    return (kh, kw, *node.attrs["strides"][1:3]), (oh, ow), (pt, pl)


def _forward_pool(fn):
    def factory(node):
        def compute(ctx, x):
            window, out_hw, pads = _pool_params(node, x.shape)
            return fn(_c(x), *window, *out_hw, *pads)

        return compute

    return factory


register_kernel("MaxPool", "CPU", dtypes=FLOATS, label="numba")(_forward_pool(_max_pool))
register_kernel("AvgPool", "CPU", dtypes=FLOATS, label="numba")(_forward_pool(_avg_pool))


@register_kernel("MaxPoolGrad", "CPU", dtypes=FLOATS, label="numba")
def max_pool_grad(node):
    def compute(ctx, x, y, dy):
        window, _, pads = _pool_params(node, x.shape)
        return _max_pool_grad(_c(x), _c(dy), *window, *pads)

    return compute


@register_kernel("AvgPoolGrad", "CPU", dtypes=FLOATS, label="numba")
def avg_pool_grad(node):
    def compute(ctx, orig_input_shape, dy):
        shape = _sizes(orig_input_shape)
        window, _, pads = _pool_params(node, shape)
        return _avg_pool_grad(_c(dy), shape[1], shape[2], *window, *pads)

    return compute


@register_kernel("SoftmaxCrossEntropyWithLogits", "CPU", dtypes=FLOATS, label="numba")
def softmax_xent(node):
    def compute(ctx, logits, labels):
        check_xent_shapes(logits, labels)
        return _softmax_xent(_c(logits), _c(labels))

    return compute


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", "CPU", dtypes=FLOATS, label="numba")
def sparse_softmax_xent(node):
    def compute(ctx, logits, labels):
        check_sparse_xent(logits, labels)
        return _sparse_softmax_xent(_c(logits), _c(labels))

    return compute
