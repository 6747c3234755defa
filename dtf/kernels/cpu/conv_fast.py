"""CPU kernels of Conv2D, its two backprops, MaxPool and MaxPoolGrad: patches gathered by
Numba into per-plan scratch buffers, multiplied by BLAS in a few large sgemms per batch.

Conv2D (NHWC input, HWIO filter) is one product [rows, kh*kw*ci] x [kh*kw*ci, co] over the
im2col patch matrix. Conv2DBackpropFilter is patches^T x dy; Conv2DBackpropInput at stride 1
is itself a convolution (dy, zero-padded by kh-1-pad_top / kw-1-pad_left, correlated with
the filter flipped in space and transposed in channels), so it gathers too instead of
scattering; at larger strides it is dy x filter^T scattered back by col2im.

The batch is cut into chunks of a few images, so that one chunk's patch matrix (about
``CHUNK_BYTES``) stays in the caches between the gather that writes it and the sgemm that
reads it; each product is still thousands of rows long. The patch buffers belong to the
kernel instance, i.e. to one node of one plan, and are reused step after step (a step
running the same plan on another thread takes a fresh one).

Dilated convolutions reach these kernels with zero-filled filters (the op layer dilates
them), so the kernels only see dilations of 1.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference.nn import check_conv_shapes, spatial_geometry
from dtf.kernels.registry import register_kernel
from . import conv_direct, onednn
from .intra_op import THREADS, run_chunks
from .jit_loading import tiered_kernel

FLOATS = (dtypes.float32, dtypes.float64)
# Patch bytes per chunk: the gather's output is still in L2/L3 when the sgemm reads it.
CHUNK_BYTES = 2 << 20


def _jit():
    from . import conv_jit

    return conv_jit


def _sizes(t):
    return tuple(int(d) for d in t)


class ScratchPool:
    """Reusable flat buffers of one kernel instance. ``take`` hands out a buffer of at
    least ``n`` items (grown when too small), ``give`` returns it; list pop/append are
    atomic, so two threads running the same plan never share one."""

    def __init__(self):
        self._free: list = []

    def take(self, n, dtype):
        buf = self._free.pop() if self._free else None
        if buf is None or buf.size < n or buf.dtype != dtype:
            buf = np.empty(n, dtype)
        return buf

    def give(self, buf):
        self._free.append(buf)


class ConvPlan:
    """One call's geometry: output size, top/left padding, the patch width K = kh*kw*ci
    and the batch chunks [b0, b1)."""

    def __init__(self, node, x_shape, w_shape, itemsize):
        check_conv_shapes(x_shape, w_shape)
        self.n, self.h, self.w, self.ci = x_shape
        self.kh, self.kw, _, self.co = w_shape
        self.sh, self.sw = node.attrs["strides"][1:3]
        (self.oh, self.ow), (self.pt, self.pl), _ = spatial_geometry(
            x_shape[1:3], (self.kh, self.kw), node.attrs["strides"], node.attrs["padding"])
        self.k = self.kh * self.kw * self.ci
        self.pixels = self.oh * self.ow
        self.chunks = _batch_chunks(self.n, self.pixels * self.k * itemsize)

    @property
    def pointwise(self):
        """A 1x1 filter at stride 1 without padding: the input is already the patch matrix."""
        return self.kh == self.kw == 1 and self.sh == self.sw == 1 and self.pt == self.pl == 0

    @property
    def padded(self):
        """(height, width) of an input image padded so that a VALID convolution of it gives
        the output size: what the direct loops read."""
        return (self.oh - 1) * self.sh + self.kh, (self.ow - 1) * self.sw + self.kw

    def check_out_backprop(self, op, dy):
        """A gradient kernel's dy must have the forward output's shape (oneDNN would read
        past a short buffer)."""
        if tuple(dy.shape) != (self.n, self.oh, self.ow, self.co):
            raise ValueError(f"{op}: out_backprop shape {list(dy.shape)} does not match the "
                             f"forward output {[self.n, self.oh, self.ow, self.co]}")

    def gather(self, xf, cols, b0, b1):
        """im2col of images [b0, b1) of the flat input ``xf`` into ``cols``."""
        _jit().im2col_into(xf, self.n, self.h, self.w, self.ci, cols, b0, b1, self.kh, self.kw,
                           self.sh, self.sw, self.oh, self.ow, self.pt, self.pl)


def _flat(a):
    return np.ascontiguousarray(a).reshape(-1)


def _chunked(pool, chunks, pixels, k, dtype, body):
    """Runs ``body(cols, b0, b1)`` for every chunk [b0, b1) over the intra-op threads, each
    with a patch buffer of ``(b1 - b0) * pixels`` rows of ``k`` taken from ``pool``."""
    def one(c):
        b0, b1 = chunks[c]
        rows = (b1 - b0) * pixels
        buf = pool.take(rows * k, dtype)
        try:
            body(buf[:rows * k].reshape(rows, k), b0, b1)
        finally:
            pool.give(buf)

    run_chunks(one, len(chunks))


def _batch_chunks(n, per_image_bytes, chunk_bytes=CHUNK_BYTES):
    """[b0, b1) ranges of about ``chunk_bytes`` of patches each, of near-equal sizes and (when
    there are fewer than images) a multiple of the intra-op threads in number: conv1 of
    the deep-MNIST CNN (78 KB of patches an image) was 26 + 26 + 12 images, so one thread
    did 38 of the 64 while the other waited."""
    if n == 0:
        return []  # an empty batch: nothing to compute
    count = min(n, max(1, -(-n * per_image_bytes // chunk_bytes)))
    if THREADS > 1 and count < n:
        count = min(n, -(-count // THREADS) * THREADS)
    return _even_ranges(n, count)


def _even_ranges(n, count):
    bounds = [n * c // count for c in range(count + 1)]
    return [(bounds[c], bounds[c + 1]) for c in range(count)]


@register_kernel("Conv2D", "CPU", dtypes=FLOATS, label="numba im2col + BLAS sgemm")
@tiered_kernel
def conv2d(node):
    pool = ScratchPool()

    def compute(ctx, x, w):
        g = ConvPlan(node, x.shape, w.shape, x.itemsize)
        out = onednn.conv2d(g, x, w)
        if out is not None:
            return out
        w2 = np.ascontiguousarray(w).reshape(g.k, g.co)
        out = np.empty((g.n, g.oh, g.ow, g.co), x.dtype)
        rows_out = out.reshape(-1, g.co)
        if g.pointwise:
            np.matmul(np.ascontiguousarray(x).reshape(-1, g.ci), w2, out=rows_out)
            return out
        direct = _direct_kernel(g.ci, g.co, x.dtype, g.ow)
        if direct is not None:
            return _run_direct(direct, pool, x, w2.reshape(w.shape), out, *g.padded, g.pt, g.pl,
                               g.sh, g.sw)
        xf = _flat(x)

        def body(cols, b0, b1):
            g.gather(xf, cols, b0, b1)
            np.matmul(cols, w2, out=rows_out[b0 * g.pixels:b1 * g.pixels])

        _chunked(pool, g.chunks, g.pixels, g.k, x.dtype, body)
        return out

    return compute


def conv2d_with_epilogue(node, inputs, bias, relu):
    """Conv2D of ``inputs`` (x, w) plus ``bias`` per output channel, then ReLU when
    ``relu``, in one oneDNN primitive; None where it does not serve (see .epilogues)."""
    if len(inputs) != 2:
        return None
    x, w = inputs
    if not (type(x) is np.ndarray and type(w) is np.ndarray and type(bias) is np.ndarray):
        return None
    return onednn.conv2d(ConvPlan(node, x.shape, w.shape, x.itemsize), x, w, bias, relu)


@register_kernel("Conv2DBackpropFilter", "CPU", dtypes=FLOATS, label="numba im2col + BLAS sgemm")
@tiered_kernel
def conv2d_backprop_filter(node):
    pool = ScratchPool()

    def compute(ctx, x, filter_sizes, dy):
        shape = _sizes(filter_sizes)
        g = ConvPlan(node, x.shape, shape, x.itemsize)
        g.check_out_backprop("Conv2DBackpropFilter", dy)
        dw = onednn.conv2d_backprop_filter(g, x, dy)
        if dw is not None:
            return dw
        dy_rows = np.ascontiguousarray(dy).reshape(-1, g.co)
        if g.pointwise:
            return np.matmul(np.ascontiguousarray(x).reshape(-1, g.ci).T, dy_rows).reshape(shape)
        direct = _direct_kernel(g.ci, g.co, x.dtype, kind="filter") if g.n * g.pixels else None
        if direct is not None:
            return _filter_direct(direct, g, pool, x, dy, shape)
        xf = _flat(x)
        # One partial sum per chunk, added at the end in chunk order: the result does not
        # depend on which thread took which chunk.
        parts = np.empty((len(g.chunks), g.k, g.co), dy.dtype)
        index = {b0: c for c, (b0, _) in enumerate(g.chunks)}

        def body(cols, b0, b1):
            g.gather(xf, cols, b0, b1)
            np.matmul(cols.T, dy_rows[b0 * g.pixels:b1 * g.pixels], out=parts[index[b0]])

        _chunked(pool, g.chunks, g.pixels, g.k, x.dtype, body)
        if len(parts) == 1:
            return parts[0].reshape(shape)
        return parts.sum(axis=0).reshape(shape)  # zeros for an empty batch

    return compute


@register_kernel("Conv2DBackpropInput", "CPU", dtypes=FLOATS, label="numba im2col/col2im + BLAS sgemm")
@tiered_kernel
def conv2d_backprop_input(node):
    pool = ScratchPool()

    def compute(ctx, input_sizes, w, dy):
        shape = _sizes(input_sizes)
        g = ConvPlan(node, shape, w.shape, dy.itemsize)
        g.check_out_backprop("Conv2DBackpropInput", dy)
        dx = onednn.conv2d_backprop_input(g, w, dy)
        if dx is not None:
            return dx
        dx = np.empty(shape, dy.dtype)
        if g.pointwise:
            np.matmul(np.ascontiguousarray(dy).reshape(-1, g.co),
                      np.ascontiguousarray(w).reshape(g.ci, g.co).T, out=dx.reshape(-1, g.ci))
            return dx
        # Gathering dy reads kh*kw*co values per input pixel, scattering kh*kw*ci per output
        # pixel (and adds instead of copies): gather only when it moves fewer bytes. At
        # co == ci the scatter's product is the wider one (N = kh*kw*ci against ci) and
        # wins: a 3x3 16 -> 16 layer on 64 x 32x32 took 6.0 ms scattered, 6.8 gathered
        # (5x5 64 -> 32 on 14x14: 18.4 scattered, 16.1 gathered).
        if g.sh == g.sw == 1:
            direct = _direct_kernel(g.co, g.ci, dy.dtype, g.w)
            if direct is not None:  # dx: dy padded, correlated with the flipped filter
                w_flip = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2))
                return _run_direct(direct, pool, dy, w_flip, dx, g.h + g.kh - 1, g.w + g.kw - 1,
                                   g.kh - 1 - g.pt, g.kw - 1 - g.pl, 1, 1)
        if g.sh == g.sw == 1 and g.co < g.ci:
            return _backprop_input_by_gather(g, pool, w, dy, dx)
        return _backprop_input_by_scatter(g, pool, w, dy, dx)

    return compute


def _direct_kernel(ci, co, dtype, ow=conv_direct.JB, kind="forward"):
    """The direct loop ``kind`` for a convolution of ``ci`` -> ``co`` channels and ``ow``
    output columns, or None where im2col serves (too many channels, or not compiled yet)."""
    if not conv_direct.eligible(ci, co, dtype, ow):
        return None
    return conv_direct.kernel_for(co, dtype, kind)


def _padded_chunks(src, hp, wp):
    """[b0, b1) chunks of the images of ``src`` for the direct loops (by padded size)."""
    return _batch_chunks(src.shape[0], hp * wp * src.shape[3] * src.itemsize,
                         conv_direct.CHUNK_BYTES)


def _over_padded(pool, src, chunks, hp, wp, top, left, body):
    """``body(k, padded, b0, b1)`` for each chunk k = [b0, b1) of ``chunks`` on the intra-op
    threads: its images of ``src`` padded to hp x wp with their first pixel at (top, left),
    in a buffer of ``pool``."""
    image = hp * wp * src.shape[3]

    def one(k):
        b0, b1 = chunks[k]
        buf = pool.take((b1 - b0) * image, src.dtype)
        try:
            body(k, conv_direct.pad_into(src, b0, b1, buf, hp, wp, top, left), b0, b1)
        finally:
            pool.give(buf)

    run_chunks(one, len(chunks))


def _run_direct(fn, pool, src, w4, out, hp, wp, top, left, sh, sw):
    """``out`` = the VALID convolution (strides sh, sw) of ``src`` padded to hp x wp with
    its first pixel at (top, left), by the direct loop ``fn``."""
    zero = src.dtype.type(0)
    _over_padded(pool, src, _padded_chunks(src, hp, wp), hp, wp, top, left,
                 lambda k, xp, b0, b1: fn(xp, w4, out, b0, sh, sw, zero))
    return out


def _filter_direct(fn, g, pool, x, dy, shape):
    """The filter gradient by the direct loop: one partial [kh, kw, ci, co] per chunk of
    padded images, added in chunk order (the same result whichever thread ran which)."""
    hp, wp = g.padded
    chunks = _padded_chunks(x, hp, wp)
    parts = np.empty((len(chunks),) + shape, dy.dtype)
    dy = np.ascontiguousarray(dy)
    zero = dy.dtype.type(0)
    _over_padded(pool, x, chunks, hp, wp, g.pt, g.pl,
                 lambda k, xp, b0, b1: fn(xp, dy[b0:b1], parts[k], g.sh, g.sw, zero))
    return parts.sum(axis=0) if len(parts) > 1 else parts[0]


def _backprop_input_by_gather(g, pool, w, dy, dx):
    """Stride 1: dx = dy (as an oh x ow image padded by kh-1-pt, kw-1-pl) correlated with
    the filter flipped in space and with in/out channels swapped."""
    w_flip = np.ascontiguousarray(w[::-1, ::-1].transpose(0, 1, 3, 2)).reshape(-1, g.ci)
    k = g.kh * g.kw * g.co
    pixels = g.h * g.w
    dyf = _flat(dy)
    rows_dx = dx.reshape(-1, g.ci)
    pads = (g.kh - 1 - g.pt, g.kw - 1 - g.pl)

    def body(cols, b0, b1):
        _jit().im2col_into(dyf, g.n, g.oh, g.ow, g.co, cols, b0, b1, g.kh, g.kw, 1, 1,
                           g.h, g.w, *pads)
        np.matmul(cols, w_flip, out=rows_dx[b0 * pixels:b1 * pixels])

    _chunked(pool, _batch_chunks(g.n, pixels * k * dy.itemsize), pixels, k, dy.dtype, body)
    return dx


def _backprop_input_by_scatter(g, pool, w, dy, dx):
    """Patch gradients dy x filter^T, added back into dx by col2im (chunks are whole
    images, so no two threads add into the same pixel)."""
    w2t = np.ascontiguousarray(w).reshape(g.k, g.co).T
    dy_rows = np.ascontiguousarray(dy).reshape(-1, g.co)
    dxf = dx.reshape(-1)
    image = g.h * g.w * g.ci

    def body(cols, b0, b1):
        dxf[b0 * image:b1 * image] = 0  # on the thread that adds into it, while in cache
        np.matmul(dy_rows[b0 * g.pixels:b1 * g.pixels], w2t, out=cols)
        _jit().col2im_add(cols, dxf, g.n, g.h, g.w, g.ci, b0, b1, g.kh, g.kw, g.sh, g.sw,
                          g.oh, g.ow, g.pt, g.pl)

    _chunked(pool, g.chunks, g.pixels, g.k, dy.dtype, body)
    return dx


# -- max pooling -------------------------------------------------------------------------------------
def _pool_geometry(node, x_shape):
    kh, kw = node.attrs["ksize"][1:3]
    (oh, ow), (pt, pl), _ = spatial_geometry(x_shape[1:3], (kh, kw), node.attrs["strides"],
                                             node.attrs["padding"])
    return (oh, ow), (kh, kw, *node.attrs["strides"][1:3], pt, pl)


def _check_pool(node, op, x):
    if x.ndim != 4:
        raise ValueError(f"{op}: input must be 4-dimensional NHWC, got shape {list(x.shape)}")
    ksize, strides = node.attrs["ksize"], node.attrs["strides"]
    if ksize[0] != 1 or ksize[3] != 1 or strides[0] != 1 or strides[3] != 1:
        raise ValueError(f"{op}: pooling over the batch or depth dimension is not supported "
                         f"(ksize {list(ksize)}, strides {list(strides)})")


# Below this many input elements a pooling runs on the calling thread alone (a pass over
# 256K floats takes about 0.1 ms, the order of waking a helper on a busy machine).
POOL_PARALLEL_MIN = 1 << 18


def _over_images(x, fn):
    """``fn(b0, b1)`` over ranges of images of ``x``: two per intra-op thread when the
    tensor is large, else one call. Images are disjoint, so is what each call writes."""
    n = x.shape[0]
    count = min(n, 2 * THREADS) if x.size >= POOL_PARALLEL_MIN and THREADS > 1 else 1
    ranges = _even_ranges(n, count)
    if count == 1:
        fn(0, n)
    else:
        run_chunks(lambda c: fn(*ranges[c]), count)


@register_kernel("MaxPool", "CPU", dtypes=FLOATS, label="numba")
@tiered_kernel
def max_pool(node):
    def compute(ctx, x):
        _check_pool(node, "MaxPool", x)
        (oh, ow), window = _pool_geometry(node, x.shape)
        out = np.empty((x.shape[0], oh, ow, x.shape[3]), x.dtype)
        if out.size:
            x = np.ascontiguousarray(x)
            _over_images(x, lambda b0, b1: _jit().max_pool_into(x, out, b0, b1, *window))
        return out

    return compute


def _tiles(x_shape, out_hw, window):
    """Whether the pooling windows cover every pixel exactly once: strides equal to the
    window, and the last window of each axis reaching the image's edge."""
    kh, kw, sh, sw, pt, pl = window
    (oh, ow), h, w = out_hw, x_shape[1], x_shape[2]
    return (sh == kh and sw == kw and (oh - 1) * sh - pt + kh >= h
            and (ow - 1) * sw - pl + kw >= w)


def _check_pool_grad(node, x, y, dy):
    """The pooled shape and window of a MaxPoolGrad's inputs, checked."""
    _check_pool(node, "MaxPoolGrad", x)
    (oh, ow), window = _pool_geometry(node, x.shape)
    expect = (x.shape[0], oh, ow, x.shape[3])
    if tuple(y.shape) != expect or tuple(dy.shape) != expect:
        raise ValueError(f"MaxPoolGrad: orig_output {list(y.shape)} and grad {list(dy.shape)} "
                         f"must have the pooled shape {list(expect)}")
    return (oh, ow), window


def _tiled_grad(x, y, dy, window, relu_masked):
    from . import pool_jit

    dx = np.empty(x.shape, dy.dtype)
    x, y, dy = (np.ascontiguousarray(a) for a in (x, y, dy))
    kh, kw, _, _, pt, pl = window
    _over_images(x, lambda b0, b1: pool_jit.max_pool_grad_tiled_into(  # writes all of dx[b0:b1]
        x, y, dy, dx, b0, b1, kh, kw, pt, pl, relu_masked))
    return dx


@register_kernel("MaxPoolGrad", "CPU", dtypes=FLOATS, label="numba")
@tiered_kernel
def max_pool_grad(node):
    def compute(ctx, x, y, dy):
        (oh, ow), window = _check_pool_grad(node, x, y, dy)
        if not dy.size:
            return np.zeros(x.shape, dy.dtype)
        if _tiles(x.shape, (oh, ow), window):
            return _tiled_grad(x, y, dy, window, False)
        dx = np.empty(x.shape, dy.dtype)
        x, y, dy = (np.ascontiguousarray(a) for a in (x, y, dy))

        def images(b0, b1):
            dx[b0:b1] = 0  # zeroed (and its pages touched) by the thread that fills it
            _jit().max_pool_grad_into(x, y, dy, dx, b0, b1, *window)

        _over_images(x, images)
        return dx

    return compute


def max_pool_grad_relu(node, x, y, dy):
    """ReluGrad(MaxPoolGrad(x, y, dy), x) in one pass where the windows tile the image (the
    pooling of a ReLU's output: dtf.runtime.fusion_pool), else None. Only once the loops
    have loaded."""
    if not (type(x) is type(y) is type(dy) is np.ndarray and x.dtype == y.dtype == dy.dtype
            and x.dtype in (np.float32, np.float64)):
        return None
    (oh, ow), window = _check_pool_grad(node, x, y, dy)
    if not dy.size or not _tiles(x.shape, (oh, ow), window):
        return None
    return _tiled_grad(x, y, dy, window, True)
