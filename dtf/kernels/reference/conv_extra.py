"""Reference semantics: the convolutions and pools beyond conv2d's family: Conv3D and its
backprops, MaxPool3D / AvgPool3D and their gradients, the second-order max-pool gradients
(2-D and 3-D), and the depthwise conv2d ops.

Layouts are channels-last (NDHWC, NHWC). Every op is written over any number of spatial
dimensions with the same window walk as the 2-D ops in ``nn.py``, and the same geometry
(``window_geometry``: SAME puts the odd padding pixel after).
"""
from __future__ import annotations

import numpy as np

from dtf.framework.common_shapes import window_geometry

from .nn import lowest
from .table import reference


# -- n-d window geometry ---------------------------------------------------------------------
class Windows:
    """The geometry of one windowed op over the spatial dims of a channels-last shape."""

    def __init__(self, x_shape, k_sizes, strides, padding):
        spatial = x_shape[1:-1]
        self.strides = list(strides[1:-1])
        self.k = list(k_sizes)
        geo = [window_geometry(spatial[i], self.k[i], self.strides[i], padding)
               for i in range(len(spatial))]
        self.out = [g[0] for g in geo]
        self.before = [g[1] for g in geo]
        self.x_shape = tuple(x_shape)
        # A padded buffer just big enough for every window (VALID may leave input unread).
        self.padded = (x_shape[0], *[(o - 1) * s + k for o, s, k in zip(self.out, self.strides, self.k)],
                       x_shape[-1])

    def pad(self, x, value=0):
        """x placed at the top/left padding inside the padded buffer (excess cropped); any
        batch and channel count."""
        out = np.full((x.shape[0], *self.padded[1:-1], x.shape[-1]), value, dtype=x.dtype)
        dst = [slice(None)]
        src = [slice(None)]
        for b, size, full in zip(self.before, x.shape[1:-1], self.padded[1:-1]):
            n = min(size, full - b)
            dst.append(slice(b, b + n))
            src.append(slice(0, n))
        out[tuple(dst + [slice(None)])] = x[tuple(src + [slice(None)])]
        return out

    def crop(self, xp):
        """The inverse of ``pad``: the input-sized region of a padded buffer (zero where
        the buffer did not reach)."""
        out = np.zeros(self.x_shape, xp.dtype)
        dst = [slice(None)]
        src = [slice(None)]
        for b, size, full in zip(self.before, self.x_shape[1:-1], self.padded[1:-1]):
            n = min(size, full - b)
            dst.append(slice(0, n))
            src.append(slice(b, b + n))
        out[tuple(dst + [slice(None)])] = xp[tuple(src + [slice(None)])]
        return out

    def views(self, xp):
        """Yields (offset, view) per kernel offset: the [n, *out, c] strided view of the
        padded buffer that offset reads."""
        for offset in np.ndindex(*self.k):
            sl = tuple(slice(p, p + (o - 1) * s + 1, s)
                       for p, o, s in zip(offset, self.out, self.strides))
            yield offset, xp[(slice(None),) + sl + (slice(None),)]


def sizes_of(t):
    return tuple(int(d) for d in np.asarray(t).reshape(-1))


def check_depth(x_shape, w_shape, op):
    if len(x_shape) != len(w_shape) or x_shape[-1] != w_shape[-2]:
        raise ValueError(f"{op}: input depth must match filter depth: input {list(x_shape)} vs. "
                         f"filter {list(w_shape)}")


# -- Conv3D -----------------------------------------------------------------------------------
@reference("Conv3D", host=True)
def conv3d(attrs, x, w):
    check_depth(x.shape, w.shape, "Conv3D")
    g = Windows(x.shape, w.shape[:-2], attrs["strides"], attrs["padding"])
    out = np.zeros((x.shape[0], *g.out, w.shape[-1]), x.dtype)
    for offset, view in g.views(g.pad(x)):
        out += view @ w[offset]
    return out


@reference("Conv3DBackpropInputV2", host=True)
def conv3d_backprop_input(attrs, input_sizes, w, dy):
    shape = sizes_of(input_sizes)
    check_depth(shape, w.shape, "Conv3DBackpropInputV2")
    g = Windows(shape, w.shape[:-2], attrs["strides"], attrs["padding"])
    dxp = np.zeros(g.padded, dy.dtype)
    for offset, view in g.views(dxp):
        view += dy @ w[offset].T
    return g.crop(dxp)


@reference("Conv3DBackpropFilterV2", host=True)
def conv3d_backprop_filter(attrs, x, filter_sizes, dy):
    shape = sizes_of(filter_sizes)
    check_depth(x.shape, shape, "Conv3DBackpropFilterV2")
    g = Windows(x.shape, shape[:-2], attrs["strides"], attrs["padding"])
    dw = np.zeros(shape, dy.dtype)
    axes = list(range(x.ndim - 1))
    for offset, view in g.views(g.pad(x)):
        dw[offset] = np.tensordot(view, dy, axes=(axes, axes))
    return dw


# -- 3-D pooling ------------------------------------------------------------------------------------
def _pool_windows(attrs, x_shape):
    return Windows(x_shape, attrs["ksize"][1:-1], attrs["strides"], attrs["padding"])


@reference("MaxPool3D", host=True)
def max_pool3d(attrs, x):
    g = _pool_windows(attrs, x.shape)
    return np.max(np.stack([v for _, v in g.views(g.pad(x, lowest(x.dtype)))]), axis=0)


@reference("MaxPool3DGrad", host=True)
def max_pool3d_grad(attrs, x, y, dy):
    """The gradient goes to the first maximum of each window in row-major order."""
    g = _pool_windows(attrs, x.shape)
    winner = np.argmax(np.stack([v for _, v in g.views(g.pad(x, lowest(x.dtype)))]), axis=0)
    dxp = np.zeros(g.padded, dy.dtype)
    for i, (_, view) in enumerate(g.views(dxp)):
        view += np.where(winner == i, dy, 0).astype(dy.dtype)
    return g.crop(dxp)


def _max_pool_grad_grad(attrs, x, y, grad):
    """For each window, the incoming gradient at the input its maximum came from (the same
    first-maximum rule as the pool's gradient): the gradient of MaxPoolGrad w.r.t. its dy."""
    g = _pool_windows(attrs, x.shape)
    winner = np.argmax(np.stack([v for _, v in g.views(g.pad(x, lowest(x.dtype)))]), axis=0)
    picks = np.stack([v for _, v in g.views(g.pad(grad))])
    return np.take_along_axis(picks, winner[None], axis=0)[0].astype(grad.dtype)


reference("MaxPool3DGradGrad", host=True)(_max_pool_grad_grad)
reference("MaxPoolGradGrad", host=True)(_max_pool_grad_grad)


def _avg_counts(g):
    """Number of real (unpadded) inputs under each output window."""
    return sum(v for _, v in g.views(g.pad(np.ones((1, *g.x_shape[1:-1], 1)))))


@reference("AvgPool3D", host=True)
def avg_pool3d(attrs, x):
    g = _pool_windows(attrs, x.shape)
    total = sum(v.astype(np.float64) for _, v in g.views(g.pad(x)))
    return (total / _avg_counts(g)).astype(x.dtype)


@reference("AvgPool3DGrad", host=True)
def avg_pool3d_grad(attrs, orig_input_shape, dy):
    g = _pool_windows(attrs, sizes_of(orig_input_shape))
    share = (dy / _avg_counts(g)).astype(dy.dtype)
    dxp = np.zeros(g.padded, dy.dtype)
    for _, view in g.views(dxp):
        view += share
    return g.crop(dxp)


# -- depthwise conv2d: filter [kh, kw, c, m]; output channel k * m + j reads input channel k ----------
def check_depthwise(x_shape, w_shape):
    if len(x_shape) != 4 or len(w_shape) != 4 or x_shape[3] != w_shape[2]:
        raise ValueError(f"DepthwiseConv2dNative: input depth must match filter's in_depth: input "
                         f"{list(x_shape)} vs. filter {list(w_shape)}")


@reference("DepthwiseConv2dNative", host=True)
def depthwise_conv2d(attrs, x, w):
    check_depthwise(x.shape, w.shape)
    g = Windows(x.shape, w.shape[:2], attrs["strides"], attrs["padding"])
    c, m = w.shape[2:]
    out = np.zeros((x.shape[0], *g.out, c, m), x.dtype)
    for offset, view in g.views(g.pad(x)):
        out += view[..., None] * w[offset]
    return out.reshape(x.shape[0], *g.out, c * m)


@reference("DepthwiseConv2dNativeBackpropInput", host=True)
def depthwise_conv2d_backprop_input(attrs, input_sizes, w, dy):
    shape = sizes_of(input_sizes)
    check_depthwise(shape, w.shape)
    g = Windows(shape, w.shape[:2], attrs["strides"], attrs["padding"])
    dy5 = dy.reshape(*dy.shape[:3], *w.shape[2:])
    dxp = np.zeros(g.padded, dy.dtype)
    for offset, view in g.views(dxp):
        view += np.sum(dy5 * w[offset], axis=-1)
    return g.crop(dxp)


@reference("DepthwiseConv2dNativeBackpropFilter", host=True)
def depthwise_conv2d_backprop_filter(attrs, x, filter_sizes, dy):
    shape = sizes_of(filter_sizes)
    check_depthwise(x.shape, shape)
    g = Windows(x.shape, shape[:2], attrs["strides"], attrs["padding"])
    dy5 = dy.reshape(*dy.shape[:3], *shape[2:])
    dw = np.zeros(shape, dy.dtype)
    for offset, view in g.views(g.pad(x)):
        dw[offset] = np.einsum("nhwc,nhwcm->cm", view, dy5)
    return dw
