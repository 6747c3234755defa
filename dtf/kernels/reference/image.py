"""Reference semantics of the resize ops: ResizeBilinear, ResizeNearestNeighbor and their
gradients, with TF's coordinate rules (``align_corners``; ``half_pixel_centers`` false is
TF1's legacy mapping) computed in float32 as TF's kernels do, so pixels match."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from .table import reference

_F = np.float32


def _bad(message):
    return errors.InvalidArgumentError(None, None, message)


def _scale(in_size, out_size, align_corners):
    if align_corners and out_size > 1:
        return _F(in_size - 1) / _F(out_size - 1)
    return _F(in_size) / _F(out_size)


def _source(out_size, scale, half_pixel):
    o = np.arange(out_size, dtype=_F)
    return (o + _F(0.5)) * scale - _F(0.5) if half_pixel else o * scale


def linear_taps(in_size, out_size, align_corners, half_pixel):
    """Per output index: lower and upper source index, and the weight of the upper."""
    x = _source(out_size, _scale(in_size, out_size, align_corners), half_pixel)
    floor = np.floor(x)
    lower = np.maximum(floor.astype(np.int64), 0)
    upper = np.minimum(np.ceil(x).astype(np.int64), in_size - 1)
    return lower, upper, (x - floor).astype(_F)


def nearest_taps(in_size, out_size, align_corners, half_pixel):
    scale = _scale(in_size, out_size, align_corners)
    o = np.arange(out_size, dtype=_F)
    x = (o + _F(0.5)) * scale if half_pixel else o * scale
    # roundf rounds halves away from zero; the coordinates are >= 0 here.
    idx = np.floor(x + _F(0.5)) if align_corners else np.floor(x)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    return np.maximum(idx, 0) if half_pixel else idx


def resize_size(size):
    size = np.asarray(size).reshape(-1)
    if size.size != 2:
        raise _bad(f"size must be a 1-D int32 Tensor of 2 elements: new_height, new_width, "
                   f"got {list(size)}")
    h, w = int(size[0]), int(size[1])
    if h <= 0 or w <= 0:
        raise _bad(f"output dimensions must be positive, got [{h}, {w}]")
    return h, w


def resize_flags(attrs):
    align, half = bool(attrs.get("align_corners", False)), bool(attrs.get("half_pixel_centers", False))
    if align and half:
        raise _bad("If half_pixel_centers is True, align_corners must be False.")
    return align, half


def check_images(images):
    images = np.asarray(images)
    if images.ndim != 4:
        raise _bad(f"input must be 4-dimensional, got shape {list(images.shape)}")
    return images


@reference("ResizeBilinear", host=True)
def _resize_bilinear(attrs, images, size):
    images = check_images(images)
    h, w = resize_size(size)
    align, half = resize_flags(attrs)
    y0, y1, ly = linear_taps(images.shape[1], h, align, half)
    x0, x1, lx = linear_taps(images.shape[2], w, align, half)
    img = images.astype(_F)
    lx = lx[None, None, :, None]
    top = img[:, y0][:, :, x0] + (img[:, y0][:, :, x1] - img[:, y0][:, :, x0]) * lx
    bottom = img[:, y1][:, :, x0] + (img[:, y1][:, :, x1] - img[:, y1][:, :, x0]) * lx
    return (top + (bottom - top) * ly[None, :, None, None]).astype(_F)


@reference("ResizeBilinearGrad", host=True)
def _resize_bilinear_grad(attrs, grads, original_image):
    align, half = resize_flags(attrs)
    grads = np.asarray(grads, _F)
    n, h, w, c = np.shape(original_image)
    y0, y1, ly = linear_taps(h, grads.shape[1], align, half)
    x0, x1, lx = linear_taps(w, grads.shape[2], align, half)
    out = np.zeros((n, h, w, c), _F)
    ly, lx = ly[None, :, None, None], lx[None, None, :, None]
    Y0, X0 = np.meshgrid(y0, x0, indexing="ij")
    Y1, X1 = np.meshgrid(y1, x1, indexing="ij")
    for ys, xs, weight in ((Y0, X0, (1 - ly) * (1 - lx)), (Y0, X1, (1 - ly) * lx),
                           (Y1, X0, ly * (1 - lx)), (Y1, X1, ly * lx)):
        contrib = grads * weight
        for b in range(n):
            np.add.at(out[b], (ys, xs), contrib[b])
    return out.astype(np.asarray(original_image).dtype)


@reference("ResizeNearestNeighbor", host=True)
def _resize_nearest(attrs, images, size):
    images = check_images(images)
    h, w = resize_size(size)
    align, half = resize_flags(attrs)
    ys = nearest_taps(images.shape[1], h, align, half)
    xs = nearest_taps(images.shape[2], w, align, half)
    return images[:, ys][:, :, xs]


@reference("ResizeNearestNeighborGrad", host=True)
def _resize_nearest_grad(attrs, grads, size):
    align, half = resize_flags(attrs)
    grads = np.asarray(grads)
    h, w = resize_size(size)
    ys = nearest_taps(h, grads.shape[1], align, half)
    xs = nearest_taps(w, grads.shape[2], align, half)
    out = np.zeros((grads.shape[0], h, w, grads.shape[3]), grads.dtype)
    Y, X = np.meshgrid(ys, xs, indexing="ij")
    for b in range(grads.shape[0]):
        np.add.at(out[b], (Y, X), grads[b])
    return out
