"""CPU kernels of fused batch norm (FusedBatchNorm/V2/V3) and its gradient
(FusedBatchNormGrad/V2/V3), float32 and float64, channels last; the numpy reference
(dtf.kernels.reference.nn_norm, which defines the semantics) serves half precision, the
channels-first layouts and empty inputs, and runs until Numba's loops have loaded.

Each direction is two passes over memory with channels innermost: the forward sums x and
x^2 per channel (float64, shifted by the first row), then writes (x - mean) * a + offset
with a = scale / sqrt(var + epsilon); the gradient sums dy and dy * (x - mean), then writes
dx = c1 * dy + c2 * (x - mean) + c3 with the per-channel constants folded. The composite it
replaces made about ten passes and as many temporaries, a third of the ResNet step.

Both passes are cut into row chunks of about ``CHUNK_ELEMENTS`` for the intra-op threads
(dtf.kernels.cpu.intra_op); partial sums are added in chunk order, so results do not depend
on which thread took which chunk.

Training on float32 NHWC tensors, and the gradient of inference, go to oneDNN's batch norm
first where it is installed (.onednn_norm: faster on tensors that a convolution has just
written); the forward with a residual add, inference's forward, float64 and 5-D tensors
stay here.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.nn_norm import CHANNELS_LAST, as_rows, check_attrs, check_vectors, epsilon
from dtf.kernels.registry import register_kernel
from . import onednn_norm
from .intra_op import run_chunks
from .jit_loading import tiered_kernel

FLOATS = (dtypes.float32, dtypes.float64)
# 128K elements (512 KB of float32) per chunk: big enough that handing a chunk to a thread
# (tens of microseconds) is noise, small enough that a 64x32x32x16 tensor makes 8 chunks.
CHUNK_ELEMENTS = 1 << 17


def _jit():
    """The Numba loops, imported on first use (keeps numba out of start-up)."""
    from . import norm_jit

    return norm_jit


def _rows_per_chunk(channels):
    return max(1, CHUNK_ELEMENTS // max(channels, 1))


def _chunk_count(rows, channels):
    return max(1, -(-rows // _rows_per_chunk(channels)))


def _over_rows(fn, rows, channels):
    """fn(k, r0, r1) for each chunk k of rows [r0, r1), on the intra-op threads."""
    per, n = _rows_per_chunk(channels), _chunk_count(rows, channels)
    if n == 1:
        fn(0, 0, rows)
    else:
        run_chunks(lambda k: fn(k, k * per, min(rows, (k + 1) * per)), n)


def _fast(attrs, x):
    fmt = attrs.get("data_format", "NHWC")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    return (fmt in CHANNELS_LAST and x.ndim in (4, 5) and x.size > 0
            and x.dtype in (np.float32, np.float64))


def moments(x2):
    """(mean, biased variance) per channel of a [rows, channels] matrix, in float64."""
    loops = _jit()
    rows, c = x2.shape
    n = _chunk_count(rows, c)
    sums, squares = np.empty((n, c)), np.empty((n, c))
    shift = x2[0].astype(np.float64)
    _over_rows(lambda k, r0, r1: loops._stats(x2, r0, r1, shift, sums, squares, k), rows, c)
    d = sums.sum(axis=0) / rows
    var = np.maximum(squares.sum(axis=0) / rows - d * d, 0.0)
    return shift + d, var


def normalize(x2, mean, a, offset, relu=False, residual=None):
    """(x2 - mean) * a + offset per channel (+ residual, a same-shape matrix; then relu),
    in x2's dtype."""
    rows, c = x2.shape
    t = x2.dtype
    m, a, b = mean.astype(t), a.astype(t), offset.astype(t)
    y2 = np.empty_like(x2)
    h = x2 if residual is None else residual
    _over_rows(lambda k, r0, r1: _jit()._scale_shift(x2, m, a, b, h, residual is not None, y2,
                                                     r0, r1, relu), rows, c)
    return y2


def forward(node, relu=False):
    """The kernel of FusedBatchNorm* ``node`` on float32/float64 channels-last inputs:
    ``compute(x, scale, offset, mean, variance, residual=None)`` -> the op's outputs, with
    y replaced by relu(y (+ residual)) when ``relu`` (a Relu, or an Add and a Relu, that
    alone read y run inside: dtf.runtime.fusion_norm); None when the inputs need the
    reference."""
    attrs = node.attrs
    eps, training = epsilon(attrs), bool(attrs.get("is_training", True))
    v3 = len(node.output_dtypes) == 6
    check_attrs(attrs)

    def compute(x, scale, offset, mean, variance, residual=None):
        if not _fast(attrs, x) or (residual is not None and (
                type(residual) is not np.ndarray or residual.shape != x.shape
                or residual.dtype != x.dtype)):
            return None
        x2 = as_rows(x, "NHWC")
        rows, c = x2.shape
        if training:
            check_vectors(c, scale=scale, offset=offset)
            done = _on_library(x, scale, offset, eps, relu, residual, rows, v3)
            if done is not None:
                return done
            m, v = moments(x2)
            u = x.dtype
            stats = (m.astype(u), (v * (rows / max(rows - 1, 1))).astype(u), m.astype(u),
                     v.astype(u))
        else:
            check_vectors(c, scale=scale, offset=offset, mean=mean, variance=variance)
            m, v = mean.astype(np.float64), variance.astype(np.float64)
            stats = (mean, variance, mean, variance)
        a = scale / np.sqrt(v + eps)
        h = None if residual is None else as_rows(residual, "NHWC")
        y = normalize(x2, m, a, offset, relu, h).reshape(x.shape)
        return (y,) + stats + ((np.zeros(0, x.dtype),) if v3 else ())

    return compute


def _on_library(x, scale, offset, eps, relu, residual, rows, v3):
    """The training forward's outputs from oneDNN (.onednn_norm), or None where it does
    not serve the inputs. A residual to add before the ReLU, which the library cannot fuse
    on CPUs, stays with our two passes: measured on the ResNet step's tensors, they took
    1.1 ms against 2.0 for the library's forward followed by an add-and-ReLU pass in place."""
    out = None if residual is not None else onednn_norm.forward(x, scale, offset, eps, relu)
    if out is None:
        return None
    y, m, v, workspace = out
    unbiased = (v.astype(np.float64) * (rows / max(rows - 1, 1))).astype(v.dtype)
    return (y, m, unbiased, m.copy(), v) + ((workspace,) if v3 else ())


def _forward(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    fast = forward(node)

    def compute(ctx, x, scale, offset, mean, variance):
        out = fast(x, scale, offset, mean, variance)
        return ref(attrs, x, scale, offset, mean, variance) if out is None else out

    return compute


def backward(node):
    """The gradient kernel of FusedBatchNormGrad* ``node`` on float32/float64 channels-last
    inputs: ``compute(dy, relu_out, x, scale, saved_mean, saved_var, reserve_3=None)`` with
    dy masked by ``relu_out > 0`` first unless relu_out is None (ReluGrad fused in); None
    when the inputs need the reference. ``reserve_3``: the forward's reserve_space_3, which
    holds oneDNN's ReLU mask where the library ran the forward (.onednn_norm)."""
    attrs = node.attrs
    eps, training = epsilon(attrs), bool(attrs.get("is_training", True))
    loops = _jit()

    def compute(dy, relu_out, x, scale, saved_mean, saved_var, reserve_3=None):
        if not _fast(attrs, x) or dy.shape != x.shape or dy.dtype != x.dtype or (
                relu_out is not None and (relu_out.shape != x.shape or relu_out.dtype != x.dtype)):
            return None
        x2, dy2 = as_rows(x, "NHWC"), as_rows(dy, "NHWC")
        masked = relu_out is not None
        f2 = as_rows(relu_out, "NHWC") if masked else dy2
        rows, c = x2.shape
        check_vectors(c, scale=scale, reserve_space_1=saved_mean, reserve_space_2=saved_var)
        done = onednn_norm.backward(dy, x, scale, saved_mean, saved_var, eps, relu_out,
                                    reserve_3, training)
        if done is not None:
            t = x.dtype
            return done + (np.zeros((), t), np.zeros((), t))
        mean = saved_mean.astype(np.float64)
        n = _chunk_count(rows, c)
        sums, dots = np.empty((n, c)), np.empty((n, c))
        _over_rows(lambda k, r0, r1: loops._grad_stats(dy2, f2, masked, x2, mean, r0, r1, sums,
                                                       dots, k), rows, c)
        doffset, dot = sums.sum(axis=0), dots.sum(axis=0)
        inv = 1.0 / np.sqrt(saved_var.astype(np.float64) + eps)
        dscale = dot * inv
        c1 = scale * inv
        if training:  # dx = c1 * (dy - mean(dy) - xhat * mean(dy * xhat)), xhat = (x - m) * inv
            c2, c3 = -c1 * inv * inv * dot / rows, -c1 * doffset / rows
        else:
            c2 = c3 = np.zeros(c)
        t = x.dtype
        m, c1, c2, c3 = mean.astype(t), c1.astype(t), c2.astype(t), c3.astype(t)
        dx2 = np.empty_like(x2)
        _over_rows(lambda k, r0, r1: loops._grad_apply(dy2, f2, masked, x2, m, c1, c2, c3, dx2,
                                                       r0, r1), rows, c)
        return (dx2.reshape(x.shape), dscale.astype(t), doffset.astype(t), np.zeros((), t),
                np.zeros((), t))

    return compute


def _backward(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    fast = backward(node)

    def compute(ctx, dy, x, scale, saved_mean, saved_var, *reserve):
        out = fast(dy, None, x, scale, saved_mean, saved_var)  # (no ReLU: no workspace)
        return ref(attrs, dy, x, scale, saved_mean, saved_var, *reserve) if out is None else out

    return compute


for _op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
    register_kernel(_op, "CPU", dtypes=FLOATS, label="numba")(tiered_kernel(_forward))
for _op in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"):
    register_kernel(_op, "CPU", dtypes=FLOATS, label="numba")(tiered_kernel(_backward))
