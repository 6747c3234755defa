"""Numba loops of max pooling's gradient for windows that tile the image, behind
dtf.kernels.cpu.conv_fast's MaxPoolGrad (loaded like .conv_jit, see .jit_loading).

With the stride equal to the window (2x2 pooling at stride 2, as in the deep-MNIST CNN)
every input pixel lies in exactly one window, so the loop can write every element of the
gradient itself (the window's gradient at its first maximum, zero at the other taps)
instead of zeroing the whole gradient first and adding into it: one write pass over dx
and no read of it.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as u  # never negative: no wraparound check (see .conv_jit)


@njit(cache=True, nogil=True)
def max_pool_grad_tiled_into(x, y, dy, dx, b0, b1, kh, kw, pt, pl, relu_masked=False):
    """Images [b0, b1) of dx for windows of kh x kw at strides kh, kw covering the image:
    each window's gradient to its first tap (row-major) equal to its maximum ``y``, as
    TF's CPU kernel and .conv_jit.max_pool_grad_into do; every other element 0.

    ``relu_masked``: ReluGrad(that, x) instead, for a pooling of a ReLU's output (see
    dtf.runtime.fusion_pool): a window's gradient times (its maximum > 0), which is the
    ReLU mask at the one tap that receives it; the other taps are 0 either way."""
    n, h, wd, c = x.shape
    oh, ow = dy.shape[1], dy.shape[2]
    xf = x.reshape(-1)
    yf = y.reshape(-1)
    gf = dy.reshape(-1)
    df = dx.reshape(-1)
    zero = dx.dtype.type(0)
    found = np.empty(c, np.bool_)
    g = np.empty(c, dx.dtype)  # the window's gradient per channel, masked or not
    for b in range(b0, b1):
        for i in range(oh):
            y0 = max(i * kh - pt, 0)
            y1 = min(i * kh - pt + kh, h)
            for j in range(ow):
                x0 = max(j * kw - pl, 0)
                x1 = min(j * kw - pl + kw, wd)
                o = ((b * oh + i) * ow + j) * c
                found[:] = False
                for ch in range(c):
                    gv = gf[u(o + ch)]
                    g[ch] = gv if not relu_masked or yf[u(o + ch)] > 0 else gv * zero
                for yy in range(y0, y1):
                    for xx in range(x0, x1):
                        s = ((b * h + yy) * wd + xx) * c
                        for ch in range(c):
                            hit = xf[u(s + ch)] == yf[u(o + ch)] and not found[ch]
                            df[u(s + ch)] = g[ch] if hit else zero
                            found[ch] = found[ch] or hit
