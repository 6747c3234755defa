"""The Numba loops behind dtf.kernels.cpu.image (the resize ops and their gradients).
Each reproduces the reference's float32 arithmetic in the reference's order
(dtf.kernels.reference.image), so pixels and gradients match it exactly; each takes a
range of output rows (forward) or of images (gradients, which scatter into rows that
neighbouring output rows share), so the caller can hand ranges to the intra-op threads."""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def resize_bilinear_rows(img, out, t0, t1, y0, y1, ly, x0, x1, lx):
    """Output rows t0..t1 (t = image * out_height + row) of the bilinear resize of the
    float32 ``img``: top = tl + (tr - tl) * wx, bottom likewise, then top + (bottom - top)
    * wy, as the reference computes it."""
    oh, ow, c = out.shape[1], out.shape[2], out.shape[3]
    for t in range(t0, t1):
        b, i = t // oh, t % oh
        ya, yb, wy = y0[i], y1[i], ly[i]
        for j in range(ow):
            xa, xb, wx = x0[j], x1[j], lx[j]
            for ch in range(c):
                tl = img[b, ya, xa, ch]
                tr = img[b, ya, xb, ch]
                bl = img[b, yb, xa, ch]
                br = img[b, yb, xb, ch]
                top = tl + (tr - tl) * wx
                bottom = bl + (br - bl) * wx
                out[b, i, j, ch] = top + (bottom - top) * wy


@njit(**_JIT)
def resize_bilinear_grad_images(g, out, b0, b1, y0, y1, ly, x0, x1, lx):
    """Images b0..b1 of the bilinear resize's input gradient, ``out`` zeroed by the caller:
    the four taps one after another, each over the output pixels in row-major order, each
    adding grads * weight (the weight a float32 product), as the reference's np.add.at
    passes do."""
    oh, ow, c = g.shape[1], g.shape[2], g.shape[3]
    one = np.float32(1)
    for b in range(b0, b1):
        for tap in range(4):
            for i in range(oh):
                wy = ly[i] if tap >= 2 else one - ly[i]
                yy = y1[i] if tap >= 2 else y0[i]
                for j in range(ow):
                    wx = lx[j] if tap % 2 == 1 else one - lx[j]
                    xx = x1[j] if tap % 2 == 1 else x0[j]
                    weight = wy * wx
                    for ch in range(c):
                        out[b, yy, xx, ch] += g[b, i, j, ch] * weight


@njit(**_JIT)
def resize_nearest_rows(img, out, t0, t1, ys, xs):
    """Output rows t0..t1 (t = image * out_height + row) of the nearest-neighbour resize."""
    oh, ow, c = out.shape[1], out.shape[2], out.shape[3]
    for t in range(t0, t1):
        b, i = t // oh, t % oh
        y = ys[i]
        for j in range(ow):
            x = xs[j]
            for ch in range(c):
                out[b, i, j, ch] = img[b, y, x, ch]


@njit(**_JIT)
def resize_nearest_grad_images(g, out, b0, b1, ys, xs):
    """Images b0..b1 of the nearest-neighbour resize's gradient, ``out`` zeroed by the
    caller: each output pixel's gradient added to its source, in row-major order."""
    oh, ow, c = g.shape[1], g.shape[2], g.shape[3]
    for b in range(b0, b1):
        for i in range(oh):
            y = ys[i]
            for j in range(ow):
                x = xs[j]
                for ch in range(c):
                    out[b, y, x, ch] += g[b, i, j, ch]
