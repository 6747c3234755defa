"""Direct convolution for few channels: each output pixel summed in registers, no patch
matrix. Serves Conv2D and the stride-1 Conv2DBackpropInput (a convolution of the padded
dy with the flipped, channel-swapped filter) when the output has at most ``MAX_CO``
channels (and at least ``MIN_CO``) and the input at most ``MAX_CI`` (see ``eligible``).

Why: for a 3x3 16 -> 16 layer on 64 x 32x32 the im2col product is [65536 x 144] x
[144 x 16]; gathering the 37.7 MB patch matrix, and OpenBLAS packing it again, cost as
much as the multiply-adds (one thread, quiet machine: 5.4 ms a call, 1.4 of them the
gather). Here one loop computes ``JB`` neighbouring output pixels of a row at once, all
``co`` output channels each, in ``JB * co`` scalar accumulators that LLVM packs into
vector registers (co = 16 float32 is one AVX-512 register): per filter tap and input
channel it loads ``co`` filter values once and adds ``JB`` broadcast input values times
them. The same layer: 2.6 ms. Padding is copied once per chunk of images into a zeroed
scratch buffer, so the loop itself never tests a bound.

Two details of the compilation matter (``_compile``):

- ``co`` is a compile-time constant: the accumulators are named variables of generated
  source, one module per (loop, co, dtype), written where the fused elementwise kernels'
  modules go (dtf.kernels.cpu.fused) so that Numba's disk cache keeps the machine code
  for the next process. A first compilation takes about 2 s, on a background thread
  unless ``DTF_JIT_BACKGROUND=0``, im2col serving meanwhile.
- Numba turns LLVM's SLP vectorizer off by default, and its loop vectorizer picks the
  input-channel loop (a reduction: gathers, 40-60 ms for the layer above). Both are
  flipped for this one compilation, under Numba's compiler lock so no other function
  compiles with them.

The generated text holds nothing from a graph but integers (the channel count) and a
dtype name from the two that ``eligible`` admits.

Sums run over (filter row, filter column, input channel) in that order for every pixel,
whatever thread or chunk computes it, so results do not depend on the thread count.
``DTF_CONV_DIRECT=0`` turns the path off (im2col everywhere).
"""
from __future__ import annotations

import logging
import os
import threading

import numpy as np

from . import jit_loading

log = logging.getLogger("dtf")

ENABLED = os.environ.get("DTF_CONV_DIRECT", "1") != "0"
JB = 4  # output pixels per register block: 4 x 16 float32 accumulators, 4 of 32 registers
MAX_CO = 32  # up to 8 accumulator registers at JB = 4
# Fewer output channels fill too little of a vector register: the input gradient of the
# deep-MNIST CNN's conv1 (32 -> 1 channel) took 17.9 ms direct against 2.2 by im2col, the
# ResNet stem's (16 -> 3) 3.1 against 1.8.
MIN_CO = 8
MAX_CI = 64
# Padded input per chunk of images: a few chunks per thread for balance on shared cores,
# each small enough to stay in L2 while its pixels are computed.
CHUNK_BYTES = 512 << 10

_compiled: dict = {}  # (co, dtype) -> function, or None while compiling / after a failure
_lock = threading.Lock()
_compiling: list = []  # background compilation threads started


def eligible(ci, co, dtype, ow=JB):
    """Whether a direct loop serves ``ci`` -> ``co`` channels (and ``ow`` output columns:
    the forward loop computes JB of them at once; the filter gradient's takes any)."""
    return (ENABLED and MIN_CO <= co <= MAX_CO and ci <= MAX_CI and ow >= JB
            and dtype in (np.float32, np.float64))


def kernel_for(co, dtype, kind="forward"):
    """The compiled loop ``kind`` (a key of ``SOURCES``) for ``co`` output channels of
    ``dtype``, or None when it is not ready (compiling in the background, or failed:
    im2col serves)."""
    key = (kind, co, np.dtype(dtype))
    fn = _compiled.get(key, False)
    if fn is not False:
        return fn
    with _lock:
        if key in _compiled:
            return _compiled[key]
        _compiled[key] = None
    if not jit_loading.BACKGROUND:  # read per call: the tests set it after import
        _build(key)
        return _compiled[key]
    thread = threading.Thread(target=_build, args=(key,), daemon=True,
                              name=f"dtf-conv-direct-{kind}-{co}")
    _compiling.append(thread)
    thread.start()
    return None


def wait(timeout_s=None):
    """Waits for the compilations started so far (for benchmarks: the steady state)."""
    for thread in list(_compiling):
        thread.join(timeout_s)


def _build(key):
    try:
        _compiled[key] = _compile(*key)
    except Exception:  # noqa: BLE001 - the im2col path still serves
        log.exception("dtf: compiling the direct convolution loop %s for co=%d %s failed; "
                      "im2col serves instead", *key)
        return
    jit_loading.kernels_changed()


def _forward_source(co):
    """Python source of ``kernel(xp, w, out, ob, sh, sw, zero)``: output images ob + b of
    ``out`` from the padded images b of ``xp`` (VALID, strides sh, sw), ``co`` channels."""
    lines = [
        "def kernel(xp, w, out, ob, sh, sw, zero):",
        "    nb, hp, wp, ci = xp.shape",
        "    kh, kw = w.shape[0], w.shape[1]",
        "    oh, ow = out.shape[1], out.shape[2]",
        "    xf = xp.reshape(-1)",
        "    wf = w.reshape(-1)",
        "    of = out.reshape(-1)",
        "    step = sw * ci",
        "    for b in range(nb):",
        "        for i in range(oh):",
        "            row0 = (b * hp + i * sh) * wp",
        "            orow = ((ob + b) * oh + i) * ow",
        "            j = 0",
        "            while j < ow:",
        f"                if j + {JB} > ow:",
        f"                    j = ow - {JB}  # the last block overlaps the one before",
    ]
    body = lines.append
    for a in range(JB):
        for o in range(co):
            body(f"                a{a}_{o} = zero")
    body("                for p in range(kh):")
    body("                    for q in range(kw):")
    body("                        xs = (row0 + p * wp + j * sw + q) * ci")
    body(f"                        wb = (p * kw + q) * ci * {co}")
    body("                        for c in range(ci):")
    body(f"                            wc = wb + c * {co}")
    for o in range(co):
        body(f"                            w{o} = wf[u(wc + {o})]")
    for a in range(JB):
        body(f"                            x{a} = xf[u(xs + {a} * step + c)]")
        for o in range(co):
            body(f"                            a{a}_{o} += x{a} * w{o}")
    body(f"                o = (orow + j) * {co}")
    for a in range(JB):
        for o in range(co):
            body(f"                of[u(o + {a * co + o})] = a{a}_{o}")
    body(f"                j += {JB}")
    return "\n".join(lines) + "\n"


def _filter_source(co):
    """Python source of ``kernel(xp, dy, out, sh, sw, zero)``: ``out`` [kh, kw, ci, co] = the
    filter gradient over the padded images of ``xp`` and their output gradients ``dy``.
    Per tap and block of ``cb`` input channels, ``cb * co`` accumulators run over every
    output pixel: one load of the pixel's co gradients, cb broadcast inputs."""
    cb = channel_block(co)
    lines = [
        "def kernel(xp, dy, out, sh, sw, zero):",
        "    nb, hp, wp, ci = xp.shape",
        "    kh, kw = out.shape[0], out.shape[1]",
        "    oh, ow = dy.shape[1], dy.shape[2]",
        "    xf = xp.reshape(-1)",
        "    df = dy.reshape(-1)",
        "    of = out.reshape(-1)",
        "    step = sw * ci",
        "    for p in range(kh):",
        "        for q in range(kw):",
        "            c = 0",
    ]
    body = lines.append
    # The channel blocks, then single channels for what is left of ci.
    for cb, cond in ((cb, f"c + {cb} <= ci"), (1, "c < ci")):
        body(f"            while {cond}:")
        for k in range(cb):
            for o in range(co):
                body(f"                a{k}_{o} = zero")
        body("                for b in range(nb):")
        body("                    for i in range(oh):")
        body("                        xs = ((b * hp + i * sh + p) * wp + q) * ci + c")
        body(f"                        ds = (b * oh + i) * ow * {co}")
        body("                        for j in range(ow):")
        for o in range(co):
            body(f"                            d{o} = df[u(ds + {o})]")
        for k in range(cb):
            body(f"                            x{k} = xf[u(xs + {k})]")
            for o in range(co):
                body(f"                            a{k}_{o} += x{k} * d{o}")
        body("                            xs += step")
        body(f"                            ds += {co}")
        body(f"                o = ((p * kw + q) * ci + c) * {co}")
        for k in range(cb):
            for o in range(co):
                body(f"                of[u(o + {k * co + o})] = a{k}_{o}")
        body(f"                c += {cb}")
    return "\n".join(lines) + "\n"


def channel_block(co):
    """Input channels per block of the filter gradient: about 128 accumulators (8 AVX-512
    registers of float32), at most 8 channels. For 16 -> 16 on 64 x 32x32, one thread:
    2 channels 7.1 ms, 4 3.7, 8 3.4 (im2col 5.8)."""
    return min(8, max(1, 128 // co))


# kind -> (source generator, integer arguments of its ``kernel`` between the three arrays and
# ``zero``)
SOURCES = {"forward": (_forward_source, 3), "filter": (_filter_source, 2)}


_HEADER = '''"""Generated by dtf.kernels.cpu.conv_direct: the {kind} loop for {co} output channels,
{dtype}. Compiled with LLVM's loop vectorizer off and its SLP vectorizer on."""
import numpy as np
from numba import from_dtype, njit, types
from numba import uint64 as u  # unsigned indices: no wraparound checks

T = from_dtype(np.dtype("{dtype}"))
A = types.Array(T, 4, "C")


# contract only: fused multiply-adds, no reassociation and no NaN assumptions.
@njit(types.void(A, A, A, {ints}T), nogil=True, fastmath={{"contract"}}, cache=True)
'''


def _compile(kind, co, dtype):
    """Writes the loop's module into the fused kernels' cache directory and imports it
    (dtf.kernels.cpu.fused: Numba's disk cache keys on the file, so the next process
    loads the machine code instead of compiling), with the vectorizers switched."""
    import hashlib

    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    from . import fused

    source, int_args = SOURCES[kind]
    dtype = np.dtype(dtype).name  # "float32" or "float64" (see eligible)
    text = _HEADER.format(kind=kind, co=co, dtype=dtype, ints="types.int64, " * int_args)
    text += source(co)
    name = "dtf_conv_direct_" + hashlib.sha256(text.encode()).hexdigest()[:24]
    with global_compiler_lock:
        saved = config.LOOP_VECTORIZE, config.SLP_VECTORIZE
        config.LOOP_VECTORIZE, config.SLP_VECTORIZE = 0, 1
        try:
            return fused._import(name, fused._write(name, text))
        finally:
            config.LOOP_VECTORIZE, config.SLP_VECTORIZE = saved


def pad_into(src, b0, b1, buf, hp, wp, top, left):
    """Images [b0, b1) of NHWC ``src`` into ``buf`` as [b1 - b0, hp, wp, c], placed at
    (top, left) and cropped to the buffer, zeros elsewhere."""
    c = src.shape[3]
    xp = buf[:(b1 - b0) * hp * wp * c].reshape(b1 - b0, hp, wp, c)
    if src.flags.c_contiguous:  # the direct loops run only once Numba's loops have loaded
        from . import conv_jit

        conv_jit.pad_images_into(src, b0, b1, xp, top, left)
        return xp
    h, w = src.shape[1], src.shape[2]
    y0, x0 = min(max(top, 0), hp), min(max(left, 0), wp)
    y1, x1 = max(min(hp, top + h), y0), max(min(wp, left + w), x0)  # empty when outside
    xp[:, :y0] = 0
    xp[:, y1:] = 0
    xp[:, y0:y1, :x0] = 0
    xp[:, y0:y1, x1:] = 0
    xp[:, y0:y1, x0:x1] = src[b0:b1, y0 - top:y1 - top, x0 - left:x1 - left]
    return xp
