"""Fused batch norm in training, forward and gradient, on oneDNN's batch normalization
primitive (float32, NHWC, 4-D), through the library that .onednn loads.

Why: the batch norm passes are bound by memory, and after a convolution its output is in
the caches of the cores whose OpenMP threads wrote it. The library's kernels run on that
same team with the same static split, so they read it there; ours pull row chunks on
other threads. On the ResNet step's 64x32x32x16 tensors, 2 cores, inputs not in cache
(median of 240 calls over 24 arrays): the forward with its ReLU 0.56 ms against 0.90-0.95
for our two passes, the gradient 0.75-0.76 against 1.32 (1.54 with the ReLU mask). These
are the kernels TensorFlow's own CPU build runs.

What is served: ``is_training`` batch norm whose tensors are float32, 4-D, channels last
and contiguous, with scale and shift; ReLU fused in (``fuse_norm_relu``); and the gradient
of inference (``use_global_stats``), without a ReLU mask. The forward
with a residual add before its ReLU is not: this version of the library implements
``fuse_norm_add_relu`` only on GPUs. Everything else stays with dtf.kernels.cpu.norm.

The library keeps, in training with ReLU fused, a workspace (one bit per element, which
ones the ReLU let through) that its gradient needs: it travels in reserve_space_3, as it
does under TensorFlow's oneDNN kernels, as a ``Workspace`` array that also holds the
ReLU's output. The gradient uses it only when the ReLU output it was given is that very
array (a view of the same memory, which the workspace keeps alive, so the address cannot
have been reused); otherwise it masks with our loops.
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import onednn
from .onednn import _ARG_WORKSPACE, _P, _QUERY_WORKSPACE, _Scratch

_BACKWARD = 128  # dnnl_backward
_GLOBAL_STATS, _USE_SCALE, _USE_SHIFT, _FUSE_RELU = 0x1, 0x2, 0x4, 0x8  # dnnl_normalization_flags_t
_ARG_MEAN, _ARG_VARIANCE, _ARG_SCALE, _ARG_SHIFT = 49, 50, 51, 52
_ARG_DIFF_SCALE, _ARG_DIFF_SHIFT = 255, 256


class Workspace(np.ndarray):
    """reserve_space_3 of a batch norm whose ReLU the library applied: its bit mask, and
    in ``relu_out`` the array the ReLU wrote."""

    relu_out = None

    def serves(self, relu_out) -> bool:
        """Whether ``relu_out`` is the ReLU output this mask was made with."""
        mine = self.relu_out
        return (mine is not None and isinstance(relu_out, np.ndarray)
                and relu_out.shape == mine.shape
                and relu_out.__array_interface__["data"][0] == mine.__array_interface__["data"][0])


class _BatchNorm:
    """The forward and backward primitives of one shape, epsilon and ReLU choice;
    ``global_stats``: the given mean and variance are used (inference), not the batch's."""

    __slots__ = ("fwd", "bwd", "fwd_scratch", "bwd_scratch", "ws_md", "ws_bytes", "x_md",
                 "vec_md", "impl", "_pds")

    def __init__(self, lib, shape, eps, relu, global_stats=False):
        n, h, w, c = shape
        self.x_md = lib.memory_desc([n, c, h, w], [h * w * c, 1, w * c, c])
        self.vec_md = lib.memory_desc([c], [1])
        flags = ctypes.c_uint(_USE_SCALE | _USE_SHIFT | (_FUSE_RELU if relu else 0)
                              | (_GLOBAL_STATS if global_stats else 0))
        eps = ctypes.c_float(eps)
        fwd = _P()
        status = lib.lib.dnnl_batch_normalization_forward_primitive_desc_create(
            ctypes.byref(fwd), lib.engine, onednn._FORWARD_TRAINING, self.x_md, self.x_md, eps,
            flags, lib.attr)
        self._pds = [fwd]
        if status == onednn._UNIMPLEMENTED:
            raise onednn._Unimplemented("batch norm")
        lib.check(status, "batch normalization forward primitive_desc_create")
        bwd = _P()
        status = lib.lib.dnnl_batch_normalization_backward_primitive_desc_create(
            ctypes.byref(bwd), lib.engine, _BACKWARD, self.x_md, self.x_md, self.x_md, eps,
            flags, fwd, lib.attr)
        self._pds.append(bwd)
        if status == onednn._UNIMPLEMENTED:
            raise onednn._Unimplemented("batch norm gradient")
        lib.check(status, "batch normalization backward primitive_desc_create")
        self.impl = (lib.impl(fwd), lib.impl(bwd))
        if any(i.startswith("ref") for i in self.impl):  # the library's plain loops
            raise onednn._Unimplemented("batch norm")
        ws = lib.query_md(fwd, _QUERY_WORKSPACE)
        self.ws_md, self.ws_bytes = (ws, lib.size(ws)) if ws.value else (None, 0)
        self.fwd_scratch, self.bwd_scratch = _Scratch(lib, fwd), _Scratch(lib, bwd)
        self.fwd, self.bwd = lib.primitive(fwd), lib.primitive(bwd)


# (shape, epsilon, relu, global_stats) -> _BatchNorm, or None where not served
_primitives: dict = {}


def _primitive(shape, eps, relu, global_stats=False):
    return onednn.cached_primitive(
        _primitives, (shape, float(np.float32(eps)), relu, global_stats),
        lambda lib: _BatchNorm(lib, shape, eps, relu, global_stats))


def _served(*arrays) -> bool:
    first = arrays[0]
    return (onednn.available() and first.ndim == 4 and first.size > 0
            and all(type(a) is np.ndarray and a.dtype == np.float32 and a.flags.c_contiguous
                    for a in arrays))


def _vector(v):
    return np.ascontiguousarray(v, np.float32)


def forward(x, scale, offset, eps, relu):
    """(y, mean, biased variance, reserve_space_3) of batch norm in training over the
    NHWC float32 ``x`` (relu(y) when ``relu``), or None where the library does not serve
    it. reserve_space_3 is a Workspace when the library keeps one, else empty."""
    if not _served(x):
        return None
    bn = _primitive(x.shape, eps, relu)
    if bn is None:
        return None
    c = x.shape[3]
    y = np.empty_like(x)
    mean, var = np.empty(c, np.float32), np.empty(c, np.float32)
    args = [(onednn._ARG_SRC, bn.x_md, x), (onednn._ARG_DST, bn.x_md, y),
            (_ARG_MEAN, bn.vec_md, mean), (_ARG_VARIANCE, bn.vec_md, var),
            (_ARG_SCALE, bn.vec_md, _vector(scale)), (_ARG_SHIFT, bn.vec_md, _vector(offset))]
    if bn.ws_bytes:
        ws = np.empty(-(-bn.ws_bytes // 4), np.float32).view(Workspace)
        ws.relu_out = y
        args.append((_ARG_WORKSPACE, bn.ws_md, ws))
    else:
        ws = np.zeros(0, np.float32)
    onednn.library().execute(bn.fwd, args + bn.fwd_scratch.args())
    return y, mean, var, ws


def backward(dy, x, scale, mean, var, eps, relu_out=None, workspace=None, training=True):
    """(dx, dscale, doffset) of batch norm, with dy masked by ``relu_out > 0`` first when
    ``relu_out`` is given, or None where the library does not serve it (with a ReLU:
    unless ``workspace`` is the forward's for that very relu_out). ``training`` False: the
    gradient of inference, where mean and var (the population's) are constants."""
    relu = relu_out is not None
    if relu and (not training or not (isinstance(workspace, Workspace)
                                      and workspace.serves(relu_out))):
        return None
    if not _served(dy, x) or dy.shape != x.shape:
        return None
    bn = _primitive(x.shape, eps, relu, not training)
    if bn is None or (relu and workspace.nbytes < bn.ws_bytes):
        return None
    c = x.shape[3]
    dx = np.empty_like(x)
    dscale, doffset = np.empty(c, np.float32), np.empty(c, np.float32)
    args = [(onednn._ARG_SRC, bn.x_md, x), (_ARG_MEAN, bn.vec_md, _vector(mean)),
            (_ARG_VARIANCE, bn.vec_md, _vector(var)), (onednn._ARG_DIFF_DST, bn.x_md, dy),
            (_ARG_SCALE, bn.vec_md, _vector(scale)), (onednn._ARG_DIFF_SRC, bn.x_md, dx),
            (_ARG_DIFF_SCALE, bn.vec_md, dscale), (_ARG_DIFF_SHIFT, bn.vec_md, doffset)]
    if relu:
        args.append((_ARG_WORKSPACE, bn.ws_md, workspace))
    onednn.library().execute(bn.bwd, args + bn.bwd_scratch.args())
    return dx, dscale, doffset


def implementation(shape, eps=1e-3, relu=False):
    """The library's (forward, gradient) implementation names for ``shape``, or None."""
    if not onednn.available():
        return None
    bn = _primitive(tuple(shape), eps, relu)
    return None if bn is None else bn.impl
