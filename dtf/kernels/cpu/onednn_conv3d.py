"""Conv3D and its two backprops on oneDNN's convolutions (float32, NDHWC activations and
DHWIO filters read in place), through the library that .onednn loads; the filter in the
layout the primitive chooses, reordered on each call as for the 2-D ones (.onednn._run).

Why: the reference runs one numpy product per filter tap over a shifted copy of the
input: 8x16x16x16x16 with a 3x3x3 filter 16 -> 16 took 11 ms forward and 21 for the two
gradients, against TensorFlow's 3.7 and 2.3.
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import onednn
from .onednn import _P, _Dims, _Scratch, _Weights


class _Conv3D:
    """One primitive of one geometry and direction (``kind``: forward, input, filter)."""

    __slots__ = ("prim", "impl", "scratch", "weights", "x_md", "y_md", "w_plain", "_pds")

    def __init__(self, lib, kind, geometry):
        n, (d, h, w), ci, (kd, kh, kw), co, out, strides, before, after = geometry
        od, oh, ow = out
        self.x_md = lib.memory_desc([n, ci, d, h, w], [d * h * w * ci, 1, h * w * ci, w * ci, ci])
        self.y_md = lib.memory_desc([n, co, od, oh, ow],
                                    [od * oh * ow * co, 1, oh * ow * co, ow * co, co])
        # DHWIO: element (z, y, x, i, o) at (((z * kh + y) * kw + x) * ci + i) * co + o
        self.w_plain = lib.memory_desc([co, ci, kd, kh, kw],
                                       [1, co, kh * kw * ci * co, kw * ci * co, ci * co])
        w_any = lib.memory_desc([co, ci, kd, kh, kw])
        s, dil = _Dims(*strides), _Dims(0, 0, 0)
        pad_l, pad_r = _Dims(*before), _Dims(*after)
        fwd = _P()
        status = lib.lib.dnnl_convolution_forward_primitive_desc_create(
            ctypes.byref(fwd), lib.engine, onednn._FORWARD_TRAINING, onednn._CONVOLUTION_DIRECT,
            self.x_md, w_any, None, self.y_md, s, dil, pad_l, pad_r, lib.attr)
        pd = fwd
        if status == 0 and kind == "input":
            pd = _P()
            status = lib.lib.dnnl_convolution_backward_data_primitive_desc_create(
                ctypes.byref(pd), lib.engine, onednn._CONVOLUTION_DIRECT, self.x_md, w_any,
                self.y_md, s, dil, pad_l, pad_r, fwd, lib.attr)
        elif status == 0 and kind == "filter":
            pd = _P()
            status = lib.lib.dnnl_convolution_backward_weights_primitive_desc_create(
                ctypes.byref(pd), lib.engine, onednn._CONVOLUTION_DIRECT, self.x_md, w_any, None,
                self.y_md, s, dil, pad_l, pad_r, fwd, lib.attr)
        self._pds = (fwd, pd)
        if status == onednn._UNIMPLEMENTED:
            raise onednn._Unimplemented(kind)
        lib.check(status, f"3-D convolution {kind} primitive_desc_create")
        self.impl = lib.impl(pd)
        if self.impl.startswith("ref"):  # the library's plain loops
            raise onednn._Unimplemented(kind)
        chosen = lib.query_md(pd, onednn._QUERY_DIFF_WEIGHTS if kind == "filter"
                              else onednn._QUERY_WEIGHTS)
        self.weights = _Weights(lib, self.w_plain, chosen, to_plain=kind == "filter")
        self.scratch = _Scratch(lib, pd)
        self.prim = lib.primitive(pd)


_primitives: dict = {}  # (kind, geometry) -> _Conv3D, or None where not served


def geometry(x_shape, w_shape, out, strides, before):
    """The key of one 3-D convolution: shapes, output size, strides and paddings (the
    right/bottom/back ones what the output size leaves, never below 0)."""
    n, *spatial, ci = (int(v) for v in x_shape)
    *k, _, co = (int(v) for v in w_shape)
    after = [max(0, (o - 1) * s + kk - i - b) for o, s, kk, i, b in zip(out, strides, k, spatial, before)]
    return (n, tuple(spatial), ci, tuple(k), co, tuple(int(o) for o in out),
            tuple(int(s) for s in strides), tuple(int(b) for b in before), tuple(after))


def _primitive(kind, geo):
    return onednn.cached_primitive(_primitives, (kind, geo), lambda lib: _Conv3D(lib, kind, geo))


def _served(geo, *arrays):
    n, _, _, _, _, out, _, _, _ = geo
    return (onednn.available() and n > 0 and all(o > 0 for o in out)
            and all(a.dtype == np.float32 for a in arrays))


def conv3d(geo, x, w):
    """Conv3D of the NDHWC ``x`` by the DHWIO ``w``, or None where not served."""
    if not _served(geo, x, w):
        return None
    conv = _primitive("forward", geo)
    if conv is None:
        return None
    n, _, _, _, co, out, _, _, _ = geo
    y = np.empty((n, *out, co), np.float32)
    onednn._run(onednn.library(), conv, [(onednn._ARG_SRC, conv.x_md, np.ascontiguousarray(x)),
                                         (onednn._ARG_DST, conv.y_md, y)],
                np.ascontiguousarray(w), onednn._ARG_WEIGHTS)
    return y


def conv3d_backprop_input(geo, w, dy):
    """The input gradient of a Conv3D, or None where not served."""
    if not _served(geo, w, dy):
        return None
    conv = _primitive("input", geo)
    if conv is None:
        return None
    n, spatial, ci, _, _, _, _, _, _ = geo
    dx = np.empty((n, *spatial, ci), np.float32)
    onednn._run(onednn.library(), conv,
                [(onednn._ARG_DIFF_DST, conv.y_md, np.ascontiguousarray(dy)),
                 (onednn._ARG_DIFF_SRC, conv.x_md, dx)],
                np.ascontiguousarray(w), onednn._ARG_WEIGHTS)
    return dx


def conv3d_backprop_filter(geo, x, dy):
    """The filter gradient of a Conv3D, DHWIO, or None where not served."""
    if not _served(geo, x, dy):
        return None
    conv = _primitive("filter", geo)
    if conv is None:
        return None
    _, _, ci, k, co, _, _, _, _ = geo
    dw = np.empty((*k, ci, co), np.float32)
    onednn._run(onednn.library(), conv,
                [(onednn._ARG_SRC, conv.x_md, np.ascontiguousarray(x)),
                 (onednn._ARG_DIFF_DST, conv.y_md, np.ascontiguousarray(dy))],
                dw, onednn._ARG_DIFF_WEIGHTS)
    return dw
