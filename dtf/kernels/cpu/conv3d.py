"""CPU kernels of Conv3D, Conv3DBackpropInputV2 and Conv3DBackpropFilterV2: oneDNN's
convolutions on float32 NDHWC (.onednn_conv3d); the numpy reference
(dtf.kernels.reference.conv_extra, which defines the semantics and checks the shapes) for
float64 and half, where the library is missing, and for graphs imported with dilations
other than 1 (the op layer dilates the filter itself, so its own ops always have 1)."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.conv_extra import Windows, check_depth, sizes_of
from dtf.kernels.registry import register_kernel
from . import onednn_conv3d

FLOATS = (dtypes.float32, dtypes.float64)


def _plain(attrs) -> bool:
    fmt = attrs.get("data_format", "NDHWC")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    return fmt == "NDHWC" and list(attrs.get("dilations", [1] * 5)) == [1] * 5


def _geometry(attrs, x_shape, w_shape):
    g = Windows(x_shape, w_shape[:-2], attrs["strides"], attrs["padding"])
    return onednn_conv3d.geometry(x_shape, w_shape, g.out, g.strides, g.before)


@register_kernel("Conv3D", "CPU", dtypes=FLOATS, label="oneDNN")
def conv3d(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    plain = _plain(attrs)

    def compute(ctx, x, w):
        if plain and x.ndim == 5 and w.ndim == 5 and x.dtype == np.float32:
            check_depth(x.shape, w.shape, "Conv3D")
            out = onednn_conv3d.conv3d(_geometry(attrs, x.shape, w.shape), x, w)
            if out is not None:
                return out
        return ref(attrs, x, w)

    return compute


@register_kernel("Conv3DBackpropInputV2", "CPU", dtypes=FLOATS, label="oneDNN")
def conv3d_backprop_input(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    plain = _plain(attrs)

    def compute(ctx, input_sizes, w, dy):
        shape = sizes_of(input_sizes)
        if plain and len(shape) == 5 and w.ndim == 5 and dy.dtype == np.float32:
            check_depth(shape, w.shape, "Conv3DBackpropInputV2")
            geo = _geometry(attrs, shape, w.shape)
            if tuple(dy.shape) == (shape[0], *geo[5], w.shape[-1]):
                out = onednn_conv3d.conv3d_backprop_input(geo, w, dy)
                if out is not None:
                    return out
        return ref(attrs, input_sizes, w, dy)

    return compute


@register_kernel("Conv3DBackpropFilterV2", "CPU", dtypes=FLOATS, label="oneDNN")
def conv3d_backprop_filter(node):
    attrs, ref = node.attrs, REFERENCE[node.op]
    plain = _plain(attrs)

    def compute(ctx, x, filter_sizes, dy):
        shape = sizes_of(filter_sizes)
        if plain and x.ndim == 5 and len(shape) == 5 and x.dtype == np.float32:
            check_depth(x.shape, shape, "Conv3DBackpropFilterV2")
            geo = _geometry(attrs, x.shape, shape)
            if tuple(dy.shape) == (x.shape[0], *geo[5], shape[-1]):
                out = onednn_conv3d.conv3d_backprop_filter(geo, x, dy)
                if out is not None:
                    return out
        return ref(attrs, x, filter_sizes, dy)

    return compute
