"""CPU kernels of the nn ops that beat numpy: average pooling and its gradient, softmax and
log-softmax, the softmax cross-entropies, ReluGrad and top-k (convolutions and max pooling:
.conv_fast). Float32 and
float64 only; the numpy reference serves every other dtype. Relu is a bare ufunc call, for
every numeric dtype.

Every loop is an njit function compiled on first call and cached on disk; the numpy
reference serves until Numba has loaded in the background (see .jit_loading). Kernels release
the GIL so the executor's threads overlap them, but are serial: on 2 shared cores a
parallel=True (prange) version measured worse, its median dominated by waiting for a busy
second core (AvgPool on 32x28x28x32: 13 ms parallel vs 0.6 ms serial; softmax cross-entropy
on 256x10: 7.7 ms vs 0.03 ms). The one exception is the sparse cross-entropy of wide rows
(a language model's vocabulary), which runs numpy's vectorized exp over blocks of rows
handed out one at a time on the intra-op threads (see WIDE_CLASSES). Geometry and input
validation stay in Python, shared with the reference, so both paths reject the same
inputs the same way.
"""
from __future__ import annotations

import math

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.nn import check_sparse_xent, check_xent_shapes, spatial_geometry
from dtf.kernels.registry import register_kernel
from . import onednn_softmax
from .elementwise import SLICE_ELEMENTS, over_slices
from .intra_op import run_ranges
from .jit_loading import tiered_kernel


def _jit():
    """The Numba loops, imported on first use (keeps numba out of start-up)."""
    from . import nn_jit

    return nn_jit

FLOATS = (dtypes.float32, dtypes.float64)


# -- factories: attrs parsed once per plan, shapes checked in Python ---------------------------------
_c = np.ascontiguousarray


def _geometry(node, x_shape, k_hw):
    return spatial_geometry(x_shape[1:3], k_hw, node.attrs["strides"], node.attrs["padding"])


def _sizes(t):
    return tuple(int(d) for d in t)


def _pool_params(node, x_shape):
    """(kh, kw, sh, sw) and the output size and top/left padding of a pooling node."""
    kh, kw = node.attrs["ksize"][1:3]
    (oh, ow), (pt, pl), _ = _geometry(node, x_shape, (kh, kw))
    return (kh, kw, *node.attrs["strides"][1:3]), (oh, ow), (pt, pl)


@register_kernel("AvgPool", "CPU", dtypes=FLOATS, label="numba, output rows over the intra-op threads")
@tiered_kernel
def avg_pool(node):
    """Output rows over the intra-op threads: on one thread a ResNet-sized pooling (3x3
    stride 2 over 64x56x56x64) took 7.2 ms against TF's 5.1."""
    into = _jit()._avg_pool_rows_into

    def compute(ctx, x):
        window, (oh, ow), pads = _pool_params(node, x.shape)
        x = _c(x)
        out = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
        run_ranges(lambda t0, t1: into(x, out, t0, t1, *window, *pads), x.shape[0] * oh,
                   ow * x.shape[3] * window[0] * window[1])
        return out

    return compute



# Elements of dx per chunk of AvgPoolGrad on the intra-op threads (whole images: a chunk
# writes only its own images of dx, so chunks never race).
POOL_GRAD_CHUNK_ELEMENTS = 1 << 18


@register_kernel("AvgPoolGrad", "CPU", dtypes=FLOATS, label="numba, images over the intra-op threads")
@tiered_kernel
def avg_pool_grad(node):
    into = _jit()._avg_pool_grad_into

    def compute(ctx, orig_input_shape, dy):
        shape = _sizes(orig_input_shape)
        window, _, pads = _pool_params(node, shape)
        dy = _c(dy)
        dx = np.zeros(shape, dy.dtype)
        run_ranges(lambda b0, b1: into(dy, dx, b0, b1, *window, *pads), shape[0],
                   math.prod(shape[1:]), POOL_GRAD_CHUNK_ELEMENTS)
        return dx

    return compute


@register_kernel("Relu", "CPU", dtypes=dtypes.NUMERIC, label="numpy ufunc")
def relu(node):
    zero = np.zeros((), node.attrs["T"].as_numpy_dtype)
    return lambda ctx, x: np.maximum(x, zero)


@register_kernel("ReluGrad", "CPU", dtypes=FLOATS, label="numba")
@tiered_kernel
def relu_grad(node):
    loops = _jit()
    attrs, ref = node.attrs, REFERENCE["ReluGrad"]

    def compute(ctx, g, f):
        if g.shape != f.shape:
            return ref(attrs, g, f)  # broadcasts as the reference does
        if g.size < 2 * SLICE_ELEMENTS:
            return loops._relu_grad(_c(g), _c(f))
        # Large (the ResNet step's 4 MiB gradients took 2 ms on one thread, most of it
        # the page faults of the fresh output): slices on the intra-op threads.
        out = np.empty(g.shape, g.dtype)
        gf, ff, of = _c(g).reshape(-1), _c(f).reshape(-1), out.reshape(-1)
        over_slices(lambda s0, s1: loops._relu_grad_into(gf, ff, of, s0, s1), g.size)
        return out

    return compute


# Rows this wide take numpy's ufuncs over blocks of rows instead of the loop: Numba's exp
# is a scalar call per element, numpy's is vectorized (a 700 x 10,000 language-model
# softmax: 35 ms in the loop, 23 as one numpy expression, 5-9 ms in blocks on two threads;
# 4096 x 100: 2.0 ms in the loop, 0.66 in blocks; 4096 x 32 level, 8192 x 10 the loop's,
# 0.56 against 0.82, numpy's reductions along short rows paying per row).
WIDE_CLASSES = 64
# ... and only from this many logits: under it the loop's one call beats numpy's dozen
# (3 x 300: 6 us in the loop, 24-29 in blocks).
WIDE_MIN_ELEMENTS = 1 << 15
# Logits per block: a block's passes (max, shift, exp, sum, scale) stay in a core's cache.
BLOCK_BYTES = 1 << 20


def _xent_blocks(logits, labels, sparse):
    """(loss, backprop) of the softmax cross-entropies as TF computes them, block by block
    of rows over the intra-op threads: shift by the row's max, one exp, scale; per row,
    loss = sum_k labels_k * (log(sum(exp(shifted))) - shifted_k) and backprop = softmax -
    labels. ``sparse``: ``labels`` are class indices (one-hot rows), else a distribution
    per row of the logits' dtype. ``logits`` C-contiguous, ``labels`` already checked."""
    from .intra_op import run_chunks

    n, classes = logits.shape
    loss = np.empty(n, logits.dtype)
    backprop = np.empty_like(logits)
    rows = max(1, BLOCK_BYTES // (classes * logits.itemsize))

    def block(i):
        r0, r1 = i * rows, min(n, (i + 1) * rows)
        x, bp, lab = logits[r0:r1], backprop[r0:r1], labels[r0:r1]
        np.subtract(x, x.max(axis=1, keepdims=True), out=bp)
        # sum_k labels_k * shifted_k, taken before the exp
        if sparse:
            at = (np.arange(r1 - r0), lab)
            weighted = bp[at]
        else:
            weighted = np.einsum("ij,ij->i", lab, bp)
        np.exp(bp, out=bp)
        total = bp.sum(axis=1, keepdims=True)
        bp /= total
        log_total = np.log(total.reshape(-1))
        if sparse:
            np.subtract(log_total, weighted, out=loss[r0:r1])
            bp[at] -= 1
        else:
            np.subtract(log_total * lab.sum(axis=1), weighted, out=loss[r0:r1])
            bp -= lab

    run_chunks(block, -(-n // rows))
    return loss, backprop


def _softmax_blocks(x2, log):
    """softmax (``log``: log-softmax) of each row of the C-contiguous [rows, classes]
    ``x2``, as the reference computes it (shift by the row's max, exp, sum, then divide or
    subtract the log), block by block of rows over the intra-op threads."""
    n, classes = x2.shape
    out = np.empty_like(x2)

    def block(r0, r1):
        xb, ob = x2[r0:r1], out[r0:r1]
        np.subtract(xb, xb.max(axis=1, keepdims=True), out=ob)
        if log:
            ob -= np.log(np.exp(ob).sum(axis=1, keepdims=True))
        else:
            np.exp(ob, out=ob)
            ob /= ob.sum(axis=1, keepdims=True)

    run_ranges(block, n, classes, BLOCK_BYTES // x2.itemsize)
    return out


def _softmax_kernel(log):
    def factory(node):
        attrs, ref = node.attrs, REFERENCE[node.op]

        def compute(ctx, x):
            # Small inputs: the reference's five numpy calls are all there is to it.
            if x.ndim < 1 or x.size < WIDE_MIN_ELEMENTS or not x.shape[-1]:
                return ref(attrs, x)
            x = _c(x)
            y = None if log else onednn_softmax.softmax(x)
            if y is not None:
                return y
            return _softmax_blocks(x.reshape(-1, x.shape[-1]), log).reshape(x.shape)

        return compute

    return factory


# Softmax in float32 from 32K elements on oneDNN's (.onednn_softmax: 32x32x32x64 in 1.2
# ms); else, and LogSoftmax always, not a Numba loop (its exp is a scalar call) but
# numpy's vectorized passes over row blocks that stay in a core's cache, on the intra-op
# threads. 32x32x32x64 float32 with the input fed: 8.1 ms as the reference's whole-array
# passes, 3.6 in blocks (numpy's reductions along rows this short pay per row: the max
# alone takes 3.3 ms on one thread).
_BLOCKS_LABEL = "numpy in row blocks over the intra-op threads"
register_kernel("Softmax", "CPU", dtypes=FLOATS, label="oneDNN from 32K float32 elements, else "
                + _BLOCKS_LABEL)(_softmax_kernel(False))
register_kernel("LogSoftmax", "CPU", dtypes=FLOATS, label=_BLOCKS_LABEL)(_softmax_kernel(True))


# Up to this k, top-k inserts into a sorted list of k per row (O(n k)); beyond, the
# reference's full stable sort is the better bound.
TOP_K_INSERTION_MAX = 64
_TOP_K_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


@register_kernel("TopKV2", "CPU", dtypes=_TOP_K_TYPES, label="numba insertion, rows over the intra-op threads")
@tiered_kernel
def top_k(node):
    """The reference sorts every row whole (256 rows of 1,000 for k=5: 10.9 ms, TensorFlow
    0.8); a list of the k best so far per row needs one pass."""
    attrs, ref, loops = node.attrs, REFERENCE["TopKV2"], _jit()

    def compute(ctx, x, k):
        kk = int(k)
        if x.ndim < 1 or not 0 < kk <= min(x.shape[-1], TOP_K_INSERTION_MAX) or not x.size:
            return ref(attrs, x, k)  # its checks and messages; k = 0; large k
        x2 = _c(x).reshape(-1, x.shape[-1])
        rows = x2.shape[0]
        values = np.empty((rows, kk), x.dtype)
        indices = np.empty((rows, kk), np.int32)
        run_ranges(lambda r0, r1: loops.top_k_rows(x2, kk, r0, r1, values, indices), rows,
                   x2.shape[1], SLICE_ELEMENTS)
        shape = x.shape[:-1] + (kk,)
        return values.reshape(shape), indices.reshape(shape)

    return compute


@register_kernel("SoftmaxCrossEntropyWithLogits", "CPU", dtypes=FLOATS,
                 label="numba; numpy in row blocks over the intra-op threads for wide rows")
@tiered_kernel
def softmax_xent(node):
    _softmax_xent = _jit()._softmax_xent

    def compute(ctx, logits, labels):
        check_xent_shapes(logits, labels)
        if (logits.shape[1] >= WIDE_CLASSES and logits.size >= WIDE_MIN_ELEMENTS
                and labels.dtype == logits.dtype):
            return _xent_blocks(_c(logits), labels, sparse=False)
        return _softmax_xent(_c(logits), _c(labels))

    return compute


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", "CPU", dtypes=FLOATS,
                 label="numba; numpy in row blocks over the intra-op threads for wide rows")
@tiered_kernel
def sparse_softmax_xent(node):
    _sparse_softmax_xent = _jit()._sparse_softmax_xent

    def compute(ctx, logits, labels):
        if logits.ndim != 2 or labels.shape != logits.shape[:1]:
            check_sparse_xent(logits, labels)  # raises
        if logits.shape[1] >= WIDE_CLASSES and logits.size >= WIDE_MIN_ELEMENTS:
            check_sparse_xent(logits, labels)  # one pass over the labels; raises TF's message
            return _xent_blocks(_c(logits), labels, sparse=True)
        # The loop finds an out-of-range label itself (one pass, no numpy temporaries);
        # the reference's check then raises TF's message.
        loss, backprop, bad_row = _sparse_softmax_xent(_c(logits), _c(labels))
        if bad_row >= 0:
            check_sparse_xent(logits, labels)
        return loss, backprop

    return compute
