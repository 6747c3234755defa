"""Softmax along the last axis, and the gradients of softmax and log-softmax, on oneDNN's
softmax primitives (float32 rows, read and written in place), through the library that
.onednn loads.

Why: numpy's passes cost per row, and rows are short where softmax is large (attention
over 64 positions): on 32768 rows of 64, softmax took 3.7-4.3 ms in numpy's row blocks
and its gradient, as the graph's Mul, Sum, Sub and Mul, 4.7 ms, where TensorFlow takes
3.3 ms for the forward and 4.5 for both (2-core AMD EPYC, median of 30). The library's
JIT kernels take 1.2 and 0.8 ms (and 0.4 for a finiteness check of the forward's input,
see _finite), as accurate as numpy's float32 passes against a float64 reference. Below
SMALLEST_ELEMENTS a call's fixed cost (memory objects, the OpenMP team: about 60 us on 64
rows of 10) outweighs what it saves, and numpy runs.

The gradients take the forward's output, as the graph's gradient ops do: the softmax's
(dy - sum(dy * y)) * y and the log-softmax's dy - sum(dy) * exp(y), which
dtf.runtime.fusion_softmax hands to ``gradient`` in one step.
"""
from __future__ import annotations

import ctypes

import numpy as np

from . import onednn
from .onednn import _ARG_DIFF_DST, _ARG_DIFF_SRC, _ARG_DST, _ARG_SRC, _P, _Scratch

_SOFTMAX_ACCURATE, _SOFTMAX_LOG = 0x30000, 0x30001  # dnnl_softmax_accurate, dnnl_softmax_log

# Fewer elements than this stay with numpy (see above; 256 x 1000: 0.17 ms here, 0.30 in
# numpy).
SMALLEST_ELEMENTS = 1 << 15


class _Softmax:
    """The gradient, and for softmax (not log-softmax: see ``softmax``) an inference
    forward, for one [rows, classes] shape and kind."""

    __slots__ = ("forward", "backward", "forward_scratch", "backward_scratch", "md", "impl",
                 "_pds")

    def __init__(self, lib, rows, classes, log):
        self.md = md = lib.memory_desc([rows, classes], [classes, 1])
        alg = _SOFTMAX_LOG if log else _SOFTMAX_ACCURATE
        props = (onednn._FORWARD_TRAINING,) if log else (onednn._FORWARD_TRAINING,
                                                         onednn._FORWARD_INFERENCE)
        pds = self._pds = []
        for prop in props:
            pd = _P()
            self._check(lib, lib.lib.dnnl_softmax_forward_primitive_desc_create(
                ctypes.byref(pd), lib.engine, prop, alg, md, md, 1, lib.attr), "softmax forward")
            pds.append(pd)
        bwd = _P()
        # The training forward is only the backward's hint: it is never run.
        self._check(lib, lib.lib.dnnl_softmax_backward_primitive_desc_create(
            ctypes.byref(bwd), lib.engine, alg, md, md, md, 1, pds[0], lib.attr), "softmax backward")
        pds.append(bwd)
        self.impl = tuple(lib.impl(pd) for pd in pds[1:])
        if any(i.startswith("ref") for i in self.impl):  # the library's plain loops
            raise onednn._Unimplemented("softmax")
        self.backward_scratch, self.backward = _Scratch(lib, bwd), lib.primitive(bwd)
        self.forward_scratch = self.forward = None
        if not log:
            self.forward_scratch, self.forward = _Scratch(lib, pds[1]), lib.primitive(pds[1])

    @staticmethod
    def _check(lib, status, what):
        if status == onednn._UNIMPLEMENTED:
            raise onednn._Unimplemented(what)
        lib.check(status, f"{what} primitive_desc_create")


_primitives: dict = {}  # (rows, classes, log) -> _Softmax, or None where not served


def _primitive(rows, classes, log):
    return onednn.cached_primitive(_primitives, (rows, classes, log),
                                   lambda lib: _Softmax(lib, rows, classes, log))


def _served(*arrays) -> bool:
    a = arrays[0]
    return (a.ndim >= 1 and a.size >= SMALLEST_ELEMENTS and onednn.available()
            and all(type(x) is np.ndarray and x.dtype == np.float32 and x.flags.c_contiguous
                    and x.shape == a.shape for x in arrays))


def _finite(x) -> bool:
    """No NaN nor infinity in ``x`` (or a sum too large: numpy then runs, as it would).
    The library's kernels treat a row with one as the reference does not: softmax of a
    row with a NaN gave zeros, not NaNs; with +inf, one NaN and zeros. One pass, 0.4 ms
    on 2M floats; the gradient of a softmax propagates them as the reference does and
    needs none."""
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, or a sum too large
        return bool(np.isfinite(np.add.reduce(x, axis=None)))


def softmax(x):
    """softmax of ``x`` along its last axis, or None where the library does not serve it.
    (Not log-softmax: the library's is 10x less accurate near 0, up to 3.6e-6 against
    numpy's 3e-7 in float32 on 32768 rows of 64, so LogSoftmax stays with numpy.)"""
    if not _served(x) or not _finite(x):
        return None
    prim = _primitive(x.size // x.shape[-1], x.shape[-1], False)
    if prim is None:
        return None
    y = np.empty_like(x)
    onednn.library().execute(prim.forward, [(_ARG_SRC, prim.md, x), (_ARG_DST, prim.md, y)]
                             + prim.forward_scratch.args())
    return y


def gradient(y, dy, log):
    """The input gradient of softmax (``log``: log-softmax) along the last axis, from its
    output ``y`` and the output gradient ``dy``; None where the library does not serve it."""
    if not _served(y, dy) or log and not _finite(y):
        return None
    prim = _primitive(y.size // y.shape[-1], y.shape[-1], log)
    if prim is None:
        return None
    dx = np.empty_like(y)
    onednn.library().execute(prim.backward, [(_ARG_DST, prim.md, y), (_ARG_DIFF_DST, prim.md, dy),
                                             (_ARG_DIFF_SRC, prim.md, dx)]
                             + prim.backward_scratch.args())
    return dx
