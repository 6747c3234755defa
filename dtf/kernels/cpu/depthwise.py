"""CPU kernels of DepthwiseConv2dNative and its two backprops: oneDNN's grouped
convolutions (one group per input channel, .onednn), float32 NHWC; the numpy reference
(dtf.kernels.reference.conv_extra, which defines the semantics) serves everything else:
float64, half, the library missing, and graphs imported with dilations other than 1 (the
op layer dilates the filter itself, so its own ops always have 1).

Why: the reference walks the kh x kw offsets with a full numpy pass each, forward and
backward; on 64x32x32x32 with a 3x3 filter a training step's three kernels took 75 ms
against TensorFlow's 3.7 (whose CPU build runs the same library).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.conv_extra import check_depthwise, sizes_of
from dtf.kernels.reference.nn import spatial_geometry
from dtf.kernels.registry import register_kernel
from . import onednn

FLOATS = (dtypes.float32, dtypes.float64)


class DepthwisePlan:
    """One call's geometry, in the names onednn's convolutions read (``groups``: the
    input channels, each its own group of ``co / groups`` outputs)."""

    def __init__(self, attrs, x_shape, w_shape):
        check_depthwise(x_shape, w_shape)
        self.n, self.h, self.w, self.ci = (int(d) for d in x_shape)
        self.kh, self.kw, _, m = (int(d) for d in w_shape)
        self.groups, self.co = self.ci, self.ci * m
        self.sh, self.sw = attrs["strides"][1:3]
        (self.oh, self.ow), (self.pt, self.pl), _ = spatial_geometry(
            x_shape[1:3], (self.kh, self.kw), attrs["strides"], attrs["padding"])

    def out_backprop_matches(self, dy) -> bool:
        return tuple(dy.shape) == (self.n, self.oh, self.ow, self.co)


def _plain(attrs) -> bool:
    """Attributes the library path takes: NHWC, no dilation (else the reference decides)."""
    fmt = attrs.get("data_format", "NHWC")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    return (fmt == "NHWC" and list(attrs.get("dilations", [1, 1, 1, 1])) == [1, 1, 1, 1]
            and attrs.get("padding") in ("SAME", "VALID", b"SAME", b"VALID"))


@register_kernel("DepthwiseConv2dNative", "CPU", dtypes=FLOATS, label="oneDNN grouped convolution")
def depthwise_conv2d(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    plain = _plain(attrs)

    def compute(ctx, x, w):
        if plain and x.ndim == 4 and w.ndim == 4 and x.size:
            out = onednn.conv2d(DepthwisePlan(attrs, x.shape, w.shape), x, w)
            if out is not None:
                return out
        return ref(attrs, x, w)

    return compute


@register_kernel("DepthwiseConv2dNativeBackpropInput", "CPU", dtypes=FLOATS,
                 label="oneDNN grouped convolution")
def depthwise_conv2d_backprop_input(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    plain = _plain(attrs)

    def compute(ctx, input_sizes, w, dy):
        shape = sizes_of(input_sizes)
        if plain and len(shape) == 4 and w.ndim == 4 and dy.size:
            g = DepthwisePlan(attrs, shape, w.shape)
            if g.out_backprop_matches(dy):
                dx = onednn.conv2d_backprop_input(g, w, dy)
                if dx is not None:
                    return dx
        return ref(attrs, input_sizes, w, dy)

    return compute


@register_kernel("DepthwiseConv2dNativeBackpropFilter", "CPU", dtypes=FLOATS,
                 label="oneDNN grouped convolution")
def depthwise_conv2d_backprop_filter(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    plain = _plain(attrs)

    def compute(ctx, x, filter_sizes, dy):
        shape = sizes_of(filter_sizes)
        if plain and x.ndim == 4 and len(shape) == 4 and dy.size:
            g = DepthwisePlan(attrs, x.shape, shape)
            if g.out_backprop_matches(dy):
                dw = onednn.conv2d_backprop_filter(g, x, dy)
                if dw is not None:
                    return dw
        return ref(attrs, x, filter_sizes, dy)

    return compute
