"""CPU kernels of ResizeBilinear, ResizeNearestNeighbor and their gradients: Numba loops
(.image_jit) over ranges of output rows or images on the intra-op threads, with the
reference's coordinate rules and float32 arithmetic in its order, so results are the
reference's (dtf.kernels.reference.image, which defines the semantics and validates the
arguments). The reference serves until Numba's loops load, and dtypes the loops do not
take (half, bool).

Why: the reference gathers whole shifted copies of the batch (the bilinear forward six of
them) and scatters gradients with np.add.at: 32x32x32x64 resized to 64x64 took 120 ms
forward and 274 with the gradient, against TF's 3 and 19.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference.image import (check_images, linear_taps, nearest_taps, resize_flags,
                                         resize_size)
from dtf.kernels.registry import register_kernel
from .intra_op import run_ranges
from .jit_loading import tiered_kernel

# The image dtypes the loops take; half and bool stay with the reference (the registry's
# fallback).
_TYPES = (dtypes.float32, dtypes.float64, dtypes.uint8, dtypes.int8, dtypes.uint16,
          dtypes.int16, dtypes.int32, dtypes.int64)


def _jit():
    from . import image_jit

    return image_jit


@register_kernel("ResizeBilinear", "CPU", dtypes=_TYPES, label="numba, rows over the intra-op threads")
@tiered_kernel
def resize_bilinear(node):
    attrs, loops = node.attrs, _jit()

    def compute(ctx, images, size):
        images = check_images(images)
        h, w = resize_size(size)
        align, half = resize_flags(attrs)
        n, ih, iw, c = images.shape
        out = np.empty((n, h, w, c), np.float32)
        if out.size:
            y0, y1, ly = linear_taps(ih, h, align, half)
            x0, x1, lx = linear_taps(iw, w, align, half)
            img = np.ascontiguousarray(images, np.float32)
            run_ranges(lambda t0, t1: loops.resize_bilinear_rows(img, out, t0, t1, y0, y1, ly, x0, x1, lx),
                  n * h, w * c)
        return out

    return compute


@register_kernel("ResizeBilinearGrad", "CPU", dtypes=(dtypes.float32, dtypes.float64),
                 label="numba, images over the intra-op threads")
@tiered_kernel
def resize_bilinear_grad(node):
    attrs, loops = node.attrs, _jit()

    def compute(ctx, grads, original_image):
        align, half = resize_flags(attrs)
        grads = np.ascontiguousarray(grads, np.float32)
        n, h, w, c = np.shape(original_image)
        out = np.zeros((n, h, w, c), np.float32)
        if grads.size and out.size:
            y0, y1, ly = linear_taps(h, grads.shape[1], align, half)
            x0, x1, lx = linear_taps(w, grads.shape[2], align, half)
            run_ranges(lambda b0, b1: loops.resize_bilinear_grad_images(
                grads, out, b0, b1, y0, y1, ly, x0, x1, lx), n, grads[0].size)
        return out.astype(np.asarray(original_image).dtype, copy=False)

    return compute


@register_kernel("ResizeNearestNeighbor", "CPU", dtypes=_TYPES, label="numba, rows over the intra-op threads")
@tiered_kernel
def resize_nearest(node):
    attrs, loops = node.attrs, _jit()

    def compute(ctx, images, size):
        images = check_images(images)
        h, w = resize_size(size)
        align, half = resize_flags(attrs)
        n, ih, iw, c = images.shape
        out = np.empty((n, h, w, c), images.dtype)
        if out.size:
            ys = nearest_taps(ih, h, align, half)
            xs = nearest_taps(iw, w, align, half)
            img = np.ascontiguousarray(images)
            run_ranges(lambda t0, t1: loops.resize_nearest_rows(img, out, t0, t1, ys, xs), n * h, w * c)
        return out

    return compute


@register_kernel("ResizeNearestNeighborGrad", "CPU", dtypes=(dtypes.float32, dtypes.float64),
                 label="numba, images over the intra-op threads")
@tiered_kernel
def resize_nearest_grad(node):
    attrs, loops = node.attrs, _jit()

    def compute(ctx, grads, size):
        align, half = resize_flags(attrs)
        grads = np.ascontiguousarray(grads)
        h, w = resize_size(size)
        out = np.zeros((grads.shape[0], h, w, grads.shape[3]), grads.dtype)
        if grads.size and out.size:
            ys = nearest_taps(h, grads.shape[1], align, half)
            xs = nearest_taps(w, grads.shape[2], align, half)
            run_ranges(lambda b0, b1: loops.resize_nearest_grad_images(grads, out, b0, b1, ys, xs),
                  grads.shape[0], grads[0].size)
        return out

    return compute
