"""The Numba loops behind dtf.kernels.cpu.conv_fast: patch gathering (im2col) into a
caller's buffer, its adjoint (col2im), and 2-D max pooling with its gradient.

Loaded like dtf.kernels.cpu.nn_jit (see .jit_loading): only once a plan needs them. Every
loop works on a range of images [b0, b1) of the batch, so a kernel can hand chunks of one
batch to several threads; each loop releases the GIL.

Indexing is flat: in NHWC the ``kw`` taps of one filter row read ``kw * c`` consecutive
floats of the input, and write as many consecutive floats of the patch row, so the inner
loop is one contiguous copy whatever the strides.

The inner loops are counted loops indexed by unsigned integers (``cf[u(base + e)]``), not
slice expressions: Numba runs ``a[i:j] += b[k:l]`` through its generic array machinery,
about 100 ns a call whatever the length, and wraps negative signed indices, a check that
keeps LLVM from vectorizing ``base + e`` (it cannot prove it non-negative); an unsigned
index has no such check. On the deep-MNIST CNN's conv2 (runs of 160 floats), one batch,
one core, loaded machine: col2im 5.5 ms with slices, 1.2 through views with their own
counters, 0.9-1.1 unsigned; im2col 3.6 -> 1.7 -> 0.8-1.1 ms; on its conv1 (runs of 5)
im2col 3.2 -> 1.9 -> 1.2 ms.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as u  # an index that is never negative: no wraparound check

_JIT = dict(cache=True, nogil=True)


@njit(cache=True, nogil=True, inline="always")
def _tap_span(j, stride, pad, k, size):
    """[q0, q1): the filter taps of output column j that read real input (not padding)."""
    start = j * stride - pad
    return max(0, -start), min(k, size - start)


@njit(**_JIT)
def im2col_into(xf, n, h, wd, ci, cols, b0, b1, kh, kw, sh, sw, oh, ow, pt, pl):
    """Rows (b, i, j) for images [b0, b1), columns (p, q, c): the input patch each output
    pixel reads, padding written as zeros (``cols`` is a reused buffer). ``xf`` is the
    flat NHWC input of shape [n, h, wd, ci]; ``cols`` a C-contiguous 2-D buffer."""
    row_len = kw * ci
    k = kh * row_len
    cf = cols.reshape(-1)
    for t in range((b1 - b0) * oh):
        b = b0 + t // oh
        i = t % oh
        for j in range(ow):
            r0 = (t * ow + j) * k
            q0, q1 = _tap_span(j, sw, pl, kw, wd)
            for p in range(kh):
                y = i * sh + p - pt
                base = r0 + p * row_len
                if y < 0 or y >= h or q0 >= q1:
                    for e in range(row_len):
                        cf[u(base + e)] = 0
                    continue
                for e in range(q0 * ci):
                    cf[u(base + e)] = 0
                src = ((b * h + y) * wd + (j * sw + q0 - pl)) * ci
                dst = base + q0 * ci
                for e in range((q1 - q0) * ci):
                    cf[u(dst + e)] = xf[u(src + e)]
                for e in range(q1 * ci, row_len):
                    cf[u(base + e)] = 0


@njit(**_JIT)
def col2im_add(cols, dxf, n, h, wd, ci, b0, b1, kh, kw, sh, sw, oh, ow, pt, pl):
    """The adjoint of im2col_into: adds each patch entry of images [b0, b1) back to the
    input pixel it came from, into the flat NHWC ``dxf`` (zeroed by the caller)."""
    row_len = kw * ci
    k = kh * row_len
    cf = cols.reshape(-1)
    for t in range((b1 - b0) * oh):
        b = b0 + t // oh
        i = t % oh
        for j in range(ow):
            r0 = (t * ow + j) * k
            q0, q1 = _tap_span(j, sw, pl, kw, wd)
            if q0 >= q1:
                continue
            length = (q1 - q0) * ci
            for p in range(kh):
                y = i * sh + p - pt
                if y < 0 or y >= h:
                    continue
                dst = ((b * h + y) * wd + (j * sw + q0 - pl)) * ci
                src = r0 + p * row_len + q0 * ci
                for e in range(length):
                    dxf[u(dst + e)] += cf[u(src + e)]


@njit(**_JIT)
def pad_images_into(src, b0, b1, xp, top, left):
    """``xp[b]`` = image ``b0 + b`` of NHWC ``src`` placed with its first pixel at (top,
    left) of ``xp``'s hp x wp (cropped to it), zeros elsewhere, for b < b1 - b0. One pass
    over each padded row: numpy's five slice assignments (four zero borders, one copy)
    took 58 us for 7 ResNet images, 17% of the direct loop's time on them; this, 34 us."""
    h, w, c = src.shape[1], src.shape[2], src.shape[3]
    hp, wp = xp.shape[1], xp.shape[2]
    sf = src.reshape(-1)
    xf = xp.reshape(-1)
    x0, x1 = max(left, 0), min(wp, left + w)
    row = wp * c
    for b in range(b1 - b0):
        for i in range(hp):
            d = (b * hp + i) * row
            si = i - top
            if si < 0 or si >= h or x1 <= x0:
                for e in range(row):
                    xf[u(d + e)] = 0
                continue
            for e in range(x0 * c):
                xf[u(d + e)] = 0
            s = (((b0 + b) * h + si) * w + x0 - left) * c
            dd = d + x0 * c
            for e in range((x1 - x0) * c):
                xf[u(dd + e)] = sf[u(s + e)]
            for e in range(x1 * c, row):
                xf[u(d + e)] = 0


@njit(**_JIT)
def max_pool_into(x, out, b0, b1, kh, kw, sh, sw, pt, pl):
    """Max over each window of images [b0, b1); padding never wins (it is not read).
    Flat unsigned indices, channels innermost (as in im2col_into: 0.84 -> 0.40 ms on the
    CNN's first pooling against per-pixel views)."""
    n, h, wd, c = x.shape
    oh, ow = out.shape[1], out.shape[2]
    xf = x.reshape(-1)
    of = out.reshape(-1)
    for b in range(b0, b1):
        for i in range(oh):
            y0 = max(i * sh - pt, 0)
            y1 = min(i * sh - pt + kh, h)
            for j in range(ow):
                x0 = max(j * sw - pl, 0)
                x1 = min(j * sw - pl + kw, wd)
                o = ((b * oh + i) * ow + j) * c
                s0 = ((b * h + y0) * wd + x0) * c
                for ch in range(c):
                    of[u(o + ch)] = xf[u(s0 + ch)]
                for y in range(y0, y1):
                    for xx in range(x0, x1):
                        s = ((b * h + y) * wd + xx) * c
                        for ch in range(c):
                            v = xf[u(s + ch)]
                            if v > of[u(o + ch)]:
                                of[u(o + ch)] = v


@njit(**_JIT)
def max_pool_grad_into(x, y, dy, dx, b0, b1, kh, kw, sh, sw, pt, pl):
    """Each window's gradient to its first maximum in row-major order (TF's CPU rule),
    for images [b0, b1); ``dx`` zeroed by the caller. The forward output ``y`` holds each
    window's maximum, so the winner is the first tap equal to it; channels are the inner
    loop (contiguous in NHWC), each with a flag for "already found". The channel loop has
    no branch (a miss adds +0.0, which leaves every value dx can hold unchanged: it starts
    at +0.0 and +0.0 + -0.0 is +0.0), so it vectorizes: 64x56x56x64, 3x3 stride 2, one
    thread, 32.5 ms with the branch, 17.1 without."""
    n, h, wd, c = x.shape
    oh, ow = dy.shape[1], dy.shape[2]
    xf = x.reshape(-1)
    yf = y.reshape(-1)
    gf = dy.reshape(-1)
    df = dx.reshape(-1)
    found = np.empty(c, np.bool_)
    zero = dx.dtype.type(0)
    for b in range(b0, b1):
        for i in range(oh):
            y0 = max(i * sh - pt, 0)
            y1 = min(i * sh - pt + kh, h)
            for j in range(ow):
                x0 = max(j * sw - pl, 0)
                x1 = min(j * sw - pl + kw, wd)
                o = ((b * oh + i) * ow + j) * c
                for ch in range(c):
                    found[ch] = False
                for yy in range(y0, y1):
                    for xx in range(x0, x1):
                        s = ((b * h + yy) * wd + xx) * c
                        for ch in range(c):
                            hit = (xf[u(s + ch)] == yf[u(o + ch)]) & (not found[ch])
                            df[u(s + ch)] += gf[u(o + ch)] if hit else zero
                            found[ch] |= hit
