"""Conv2D (NHWC) with both backprops, and max/avg pooling with their gradients, on CUDA.

Geometry (output size and SAME/VALID padding) comes from the reference implementation.
Forward ops and the input/filter backprops gather: one thread per output element, so no
atomics. The pooling gradients scatter each window's share with atomic adds.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from dtf.kernels.reference.nn import check_conv_shapes, lowest, spatial_geometry
from dtf.kernels.registry import register_kernel
from . import device as D
from .elementwise import FLOATS, filled


@cuda.jit
def _conv2d(x, w, out, sh, sw, pt, pl):
    n_, oh, ow, co = out.shape
    kh, kw, ci, _ = w.shape
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        o = i % co
        q = (i // co) % ow
        p = (i // (co * ow)) % oh
        n = i // (co * ow * oh)
        acc = x[0, 0, 0, 0] * 0
        for a in range(kh):
            h = p * sh + a - pt
            if 0 <= h < x.shape[1]:
                for b in range(kw):
                    v = q * sw + b - pl
                    if 0 <= v < x.shape[2]:
                        for c in range(ci):
                            acc += x[n, h, v, c] * w[a, b, c, o]
        out[n, p, q, o] = acc
        i += step


@cuda.jit
def _conv2d_backprop_input(w, dy, dx, sh, sw, pt, pl):
    _, h_, w_, ci = dx.shape
    kh, kw, _, co = w.shape
    oh, ow = dy.shape[1], dy.shape[2]
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < dx.size:
        c = i % ci
        v = (i // ci) % w_
        h = (i // (ci * w_)) % h_
        n = i // (ci * w_ * h_)
        acc = dy[0, 0, 0, 0] * 0
        for a in range(kh):
            hh = h + pt - a
            if hh >= 0 and hh % sh == 0 and hh // sh < oh:
                for b in range(kw):
                    vv = v + pl - b
                    if vv >= 0 and vv % sw == 0 and vv // sw < ow:
                        for o in range(co):
                            acc += dy[n, hh // sh, vv // sw, o] * w[a, b, c, o]
        dx[n, h, v, c] = acc
        i += step


@cuda.jit
def _conv2d_backprop_filter(x, dy, dw, sh, sw, pt, pl):
    kh, kw, ci, co = dw.shape
    n_, oh, ow, _ = dy.shape
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < dw.size:
        o = i % co
        c = (i // co) % ci
        b = (i // (co * ci)) % kw
        a = i // (co * ci * kw)
        acc = dy[0, 0, 0, 0] * 0
        for n in range(n_):
            for p in range(oh):
                h = p * sh + a - pt
                if 0 <= h < x.shape[1]:
                    for q in range(ow):
                        v = q * sw + b - pl
                        if 0 <= v < x.shape[2]:
                            acc += x[n, h, v, c] * dy[n, p, q, o]
        dw[a, b, c, o] = acc
        i += step


@cuda.jit
def _pool(x, out, kh, kw, sh, sw, pt, pl, is_max, low):
    n_, oh, ow, ch = out.shape
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        c = i % ch
        q = (i // ch) % ow
        p = (i // (ch * ow)) % oh
        n = i // (ch * ow * oh)
        acc = x[0, 0, 0, 0] * 0 + low if is_max else x[0, 0, 0, 0] * 0
        count = 0
        for a in range(kh):
            h = p * sh + a - pt
            for b in range(kw):
                v = q * sw + b - pl
                if 0 <= h < x.shape[1] and 0 <= v < x.shape[2]:
                    count += 1
                    acc = max(acc, x[n, h, v, c]) if is_max else acc + x[n, h, v, c]
        out[n, p, q, c] = acc if is_max else acc / max(count, 1)
        i += step


@cuda.jit
def _pool_grad(x, dy, dx, kh, kw, sh, sw, pt, pl, is_max):
    """Scatters dy: to the first maximum of each window (row-major, as TF CPU) or evenly
    over the window's real inputs."""
    n_, oh, ow, ch = dy.shape
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < dy.size:
        c = i % ch
        q = (i // ch) % ow
        p = (i // (ch * ow)) % oh
        n = i // (ch * ow * oh)
        count = 0
        bh = -1
        bv = -1
        for a in range(kh):
            h = p * sh + a - pt
            for b in range(kw):
                v = q * sw + b - pl
                if 0 <= h < dx.shape[1] and 0 <= v < dx.shape[2]:
                    count += 1
                    if is_max and (bh < 0 or x[n, h, v, c] > x[n, bh, bv, c]):
                        bh = h
                        bv = v
        if is_max:
            if bh >= 0:
                cuda.atomic.add(dx, (n, bh, bv, c), dy[n, p, q, c])
        elif count:
            share = dy[n, p, q, c] / count
            for a in range(kh):
                h = p * sh + a - pt
                for b in range(kw):
                    v = q * sw + b - pl
                    if 0 <= h < dx.shape[1] and 0 <= v < dx.shape[2]:
                        cuda.atomic.add(dx, (n, h, v, c), share)
        i += step


def _check_nhwc(node):
    a = node.attrs
    if a.get("data_format", "NHWC") != "NHWC" or any(d != 1 for d in a.get("dilations", (1, 1, 1, 1))):
        raise NotImplementedError(f"{node.op} on GPU supports NHWC without dilation only")
    if a.get("padding") not in ("SAME", "VALID"):
        raise NotImplementedError(f"{node.op} on GPU supports SAME and VALID padding only")


def _geometry(node, x_shape, k_hw):
    strides = node.attrs["strides"]
    out_hw, before, _ = spatial_geometry(tuple(x_shape[1:3]), tuple(k_hw), strides, node.attrs["padding"])
    return out_hw, (int(strides[1]), int(strides[2])), before


def _launch(kernel, out, *args):
    if out.size:
        kernel[D.grid(out.size)](*args)
    return out


@register_kernel("Conv2D", "GPU", dtypes=FLOATS, label="cuda direct")
def conv2d(node):
    _check_nhwc(node)

    def compute(ctx, x, w):
        x, w = D.to_device(x), D.to_device(w)
        check_conv_shapes(x.shape, w.shape)
        (oh, ow), (sh, sw), (pt, pl) = _geometry(node, x.shape, w.shape[:2])
        out = D.empty((x.shape[0], oh, ow, w.shape[3]), x.dtype)
        return _launch(_conv2d, out, x, w, out, sh, sw, pt, pl)

    return compute


@register_kernel("Conv2DBackpropInput", "GPU", dtypes=FLOATS, label="cuda direct")
def conv2d_backprop_input(node):
    _check_nhwc(node)

    def compute(ctx, input_sizes, w, dy):
        shape = tuple(D.host_ints(input_sizes))
        w, dy = D.to_device(w), D.to_device(dy)
        check_conv_shapes(shape, w.shape)
        _, (sh, sw), (pt, pl) = _geometry(node, shape, w.shape[:2])
        dx = filled(shape, dy.dtype, 0)
        return _launch(_conv2d_backprop_input, dx, w, dy, dx, sh, sw, pt, pl) if dy.size else dx

    return compute


@register_kernel("Conv2DBackpropFilter", "GPU", dtypes=FLOATS, label="cuda direct")
def conv2d_backprop_filter(node):
    _check_nhwc(node)

    def compute(ctx, x, filter_sizes, dy):
        shape = tuple(D.host_ints(filter_sizes))
        x, dy = D.to_device(x), D.to_device(dy)
        check_conv_shapes(x.shape, shape)
        _, (sh, sw), (pt, pl) = _geometry(node, x.shape, shape[:2])
        dw = filled(shape, dy.dtype, 0)
        return _launch(_conv2d_backprop_filter, dw, x, dy, dw, sh, sw, pt, pl) if dy.size else dw

    return compute


def _pool_factory(is_max):
    def factory(node):
        _check_nhwc(node)
        kh, kw = (int(k) for k in node.attrs["ksize"][1:3])

        def compute(ctx, x):
            x = D.to_device(x)
            (oh, ow), (sh, sw), (pt, pl) = _geometry(node, x.shape, (kh, kw))
            out = D.empty((x.shape[0], oh, ow, x.shape[3]), x.dtype)
            low = float(lowest(np.dtype(x.dtype)))
            return _launch(_pool, out, x, out, kh, kw, sh, sw, pt, pl, is_max, low)

        return compute

    return factory


register_kernel("MaxPool", "GPU", dtypes=FLOATS, label="cuda direct")(_pool_factory(True))
register_kernel("AvgPool", "GPU", dtypes=FLOATS, label="cuda direct")(_pool_factory(False))


def _pool_grad_factory(is_max):
    def factory(node):
        _check_nhwc(node)
        kh, kw = (int(k) for k in node.attrs["ksize"][1:3])

        def scatter(x, shape, dy):
            dy = D.to_device(dy)
            _, (sh, sw), (pt, pl) = _geometry(node, shape, (kh, kw))
            dx = filled(shape, dy.dtype, 0)
            _launch(_pool_grad, dy, x, dy, dx, kh, kw, sh, sw, pt, pl, is_max)
            return dx

        if is_max:
            return lambda ctx, x, y, dy: scatter(D.to_device(x), tuple(x.shape), dy)
        return lambda ctx, orig_input_shape, dy: scatter(
            D.to_device(np.zeros((1, 1, 1, 1), dy.dtype)), tuple(D.host_ints(orig_input_shape)), dy)

    return factory


register_kernel("MaxPoolGrad", "GPU", dtypes=FLOATS, label="cuda atomics")(_pool_grad_factory(True))
register_kernel("AvgPoolGrad", "GPU", dtypes=FLOATS, label="cuda atomics")(_pool_grad_factory(False))
