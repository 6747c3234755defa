"""Conv2D, its two backprops and large float32 matrix products on oneDNN, the primitives
library TensorFlow's own CPU kernels are built on, called through ctypes. The forward
primitives can also add a bias and apply ReLU as they write (.epilogues).

Why a library here: on the deep-MNIST CNN's and the ResNet step's layer shapes oneDNN's
JIT-generated convolutions ("brgconv", AVX-512 where the processor has it) run at about
twice the rate of our im2col + OpenBLAS and direct Numba loops, on both cores (2-core
Xeon, float32, median of 20 calls: the CNN's conv2 forward / input gradient / filter
gradient 3.1 / 3.0 / 3.4 ms against 5.8 / 7.5 / 6.3; the ResNet 3x3 16 -> 16 layer 0.9 ms
against 1.9 for each of the three), and sixteen rounds of our own kernels had stopped
short of that. The library comes from the ``onednn-cpu-gomp`` wheel (x86-64 Linux; a
CPU-only build threaded by GNU OpenMP) and is optional: where it is missing, cannot load,
or does not implement a call (``unimplemented`` from the library, or only its reference
loops), the kernels in .conv_fast and .blas run as before.

What is passed: NHWC activations and HWIO filters described by their strides, so the
library reads and writes numpy's arrays in place; the filter only in the blocked layout
that the chosen implementation asks for (``format any``), reordered from and to HWIO on
each call (the filter is small: the CNN's conv2 is 51,200 floats). Primitives, reorders
and their descriptors are built once per geometry and kept; scratch memory is ours
(``scratchpad_mode user``), one numpy buffer per call, so one primitive may run on several
threads at once. Each thread has its own stream, and runs the library with the intra-op
thread count (``intra_op.THREADS``) as its OpenMP team size: the calling thread does its
share and the team's other threads the rest, so a convolution takes the cores that a
chunked kernel of ours would, no more.

``DTF_ONEDNN=0`` turns the path off; ``DTF_ONEDNN_LIB`` names the library file.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading

import numpy as np

log = logging.getLogger("dtf.kernels.onednn")

ENABLED = os.environ.get("DTF_ONEDNN", "1") != "0"

# The C API's constants (oneDNN 3.x, dnnl_types.h; some, as eltwise_relu, differ in 1.x).
_F32 = 3  # dnnl_f32
_FORMAT_ANY = 1  # dnnl_format_tag_any
_CPU = 1  # dnnl_cpu
_IN_ORDER = 1  # dnnl_stream_in_order
_FORWARD_TRAINING = 64  # dnnl_forward_training
_CONVOLUTION_DIRECT = 1  # dnnl_convolution_direct
_SCRATCHPAD_USER = 1  # dnnl_scratchpad_mode_user
_QUERY_IMPL_INFO = 8  # dnnl_query_impl_info_str
_QUERY_WEIGHTS = 131  # dnnl_query_weights_md
_QUERY_DIFF_WEIGHTS = 132  # dnnl_query_diff_weights_md
_QUERY_WORKSPACE = 135  # dnnl_query_workspace_md
_QUERY_SCRATCHPAD = 136  # dnnl_query_scratchpad_md
_FORWARD_INFERENCE = 96  # dnnl_forward_inference
_ARG_WORKSPACE = 64
_ARG_SRC, _ARG_DST, _ARG_WEIGHTS, _ARG_SCRATCHPAD = 1, 17, 33, 80
_ARG_DIFF_SRC, _ARG_DIFF_DST, _ARG_DIFF_WEIGHTS = 129, 145, 161
_UNIMPLEMENTED = 3  # dnnl_unimplemented
_ELTWISE_RELU = 0x20  # dnnl_eltwise_relu
_ARG_BIAS = 41

_Dims = ctypes.c_int64 * 12  # dnnl_dims_t
_P = ctypes.c_void_p


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _P)]


class OneDNNError(RuntimeError):
    pass


def _library_paths():
    named = os.environ.get("DTF_ONEDNN_LIB")
    if named:
        return [named]
    # The wheel installs into the environment's lib/ (a data file, not a package).
    paths = [p for p in (os.path.join(sys.prefix, "lib", name) for name in ("libdnnl.so.3", "libdnnl.so"))
             if os.path.exists(p)]
    found = ctypes.util.find_library("dnnl")
    return paths + ([found] if found else [])


class _Library:
    """The loaded library: its functions with their C types, one CPU engine."""

    def __init__(self, path):
        lib = self.lib = ctypes.CDLL(path)
        self.path = path
        lib.dnnl_primitive_desc_query_md.restype = _P
        lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        lib.dnnl_memory_desc_get_size.argtypes = [_P]
        lib.dnnl_memory_desc_equal.argtypes = [_P, _P]
        lib.dnnl_primitive_desc_query_md.argtypes = [_P, ctypes.c_int, ctypes.c_int]
        self.engine = _P()
        self.check(lib.dnnl_engine_create(ctypes.byref(self.engine), _CPU, 0), "engine_create")
        self.attr = self._attr()  # every primitive's: scratch memory is passed by the caller
        self.attr_relu = self._attr()  # the same with ReLU applied in the primitive's loop
        post_ops = _P()
        self.check(lib.dnnl_post_ops_create(ctypes.byref(post_ops)), "post_ops_create")
        lib.dnnl_post_ops_append_eltwise.argtypes = [_P, ctypes.c_int, ctypes.c_float, ctypes.c_float]
        self.check(lib.dnnl_post_ops_append_eltwise(post_ops, _ELTWISE_RELU, 0.0, 0.0),
                   "post_ops_append_eltwise")
        self.check(lib.dnnl_primitive_attr_set_post_ops(self.attr_relu, post_ops), "set_post_ops")
        lib.dnnl_post_ops_destroy(post_ops)  # the attribute holds its own copy
        self._set_team = _omp_setter()
        from .intra_op import THREADS

        self.team = THREADS  # every thread's OpenMP team size (module docstring)
        self._local = threading.local()

    def _attr(self):
        attr = _P()
        self.check(self.lib.dnnl_primitive_attr_create(ctypes.byref(attr)), "attr_create")
        self.check(self.lib.dnnl_primitive_attr_set_scratchpad_mode(attr, _SCRATCHPAD_USER),
                   "set_scratchpad_mode")
        return attr

    @staticmethod
    def check(status, what):
        if status != 0:
            raise OneDNNError(f"oneDNN {what}: status {status}")

    def stream(self):
        """This thread's stream (streams are not shared between threads); the thread's
        OpenMP team size is set on first use, so call it before building a primitive too
        (a primitive splits its work for the team of the thread that builds it)."""
        local = self._local
        stream = getattr(local, "stream", None)
        if stream is None:
            if self._set_team is not None:
                self._set_team(self.team)
            stream = _P()
            self.check(self.lib.dnnl_stream_create(ctypes.byref(stream), self.engine, _IN_ORDER),
                       "stream_create")
            local.stream = stream
        return stream

    def memory_desc(self, dims, strides=None):
        md = _P()
        if strides is None:
            status = self.lib.dnnl_memory_desc_create_with_tag(
                ctypes.byref(md), len(dims), _Dims(*dims), _F32, _FORMAT_ANY)
        else:
            status = self.lib.dnnl_memory_desc_create_with_strides(
                ctypes.byref(md), len(dims), _Dims(*dims), _F32, _Dims(*strides))
        self.check(status, "memory_desc_create")
        return md

    def size(self, md):
        return int(self.lib.dnnl_memory_desc_get_size(md))

    def query_md(self, pd, what):
        return _P(self.lib.dnnl_primitive_desc_query_md(pd, what, 0))

    def impl(self, pd):
        text = ctypes.c_char_p()
        self.check(self.lib.dnnl_primitive_desc_query(pd, _QUERY_IMPL_INFO, 0, ctypes.byref(text)),
                   "query impl_info_str")
        return text.value.decode()

    def primitive(self, pd):
        prim = _P()
        self.check(self.lib.dnnl_primitive_create(ctypes.byref(prim), pd), "primitive_create")
        return prim

    def reorder_pd(self, src_md, dst_md):
        pd = _P()
        self.check(self.lib.dnnl_reorder_primitive_desc_create(
            ctypes.byref(pd), src_md, self.engine, dst_md, self.engine, self.attr), "reorder")
        return pd

    def execute(self, prim, args, alone=False):
        """Runs ``prim`` on this thread's stream over ``args``: (argument, memory
        descriptor, numpy array) triples; the memory objects live for this call only.
        ``alone``: on the calling thread only, without waking the OpenMP team (for the
        filter reorders: waking a sleeping team thread took about 100 us on this 2-core
        machine, a tiny convolution 196 us a call against 24 on one thread)."""
        lib, engine = self.lib, self.engine
        memories = []
        stream = self.stream()  # (sets the thread's team size first, then changed here)
        single = alone and self._set_team is not None and self.team > 1
        if single:
            self._set_team(1)
        try:
            packed = (_ExecArg * len(args))()
            for i, (arg, md, array) in enumerate(args):
                mem = _P()
                self.check(lib.dnnl_memory_create(ctypes.byref(mem), md, engine,
                                                  _P(array.ctypes.data)), "memory_create")
                memories.append(mem)
                packed[i].arg, packed[i].memory = arg, mem
            self.check(lib.dnnl_primitive_execute(prim, stream, len(args), packed), "execute")
            self.check(lib.dnnl_stream_wait(stream), "stream_wait")
        finally:
            for mem in memories:
                lib.dnnl_memory_destroy(mem)
            if single:
                self._set_team(self.team)


def _omp_setter():
    """``omp_set_num_threads`` of the OpenMP runtime the library loaded (it sets the
    calling thread's team size), or None."""
    for name in ("libgomp.so.1", ctypes.util.find_library("gomp")):
        if not name:
            continue
        try:
            fn = ctypes.CDLL(name).omp_set_num_threads
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], None
        return fn
    return None


_library = None
_looked = False
_load_lock = threading.Lock()


def library():
    """The loaded library, or None (not installed, or failed to load)."""
    global _library, _looked
    if not _looked:
        with _load_lock:
            if not _looked:
                _library = _load()
                _looked = True
    return _library


def _load():
    # OpenMP's team threads sleep as soon as a convolution ends instead of spinning for a
    # while: the CNN step is level (31.5 ms either way) and spinning would take the core
    # from a ps or a second worker on the same host (with OMP_WAIT_POLICY=active the step
    # itself took 39-41 ms, with the caller-only inter-op policy). libgomp reads the
    # setting once, when it loads; a value the user set is kept.
    added = "OMP_WAIT_POLICY" not in os.environ
    if added:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        for path in _library_paths():
            try:
                return _Library(path)
            except (OSError, AttributeError, OneDNNError) as e:
                log.debug("oneDNN at %s not used: %s", path, e)
        return None
    finally:
        if added:
            del os.environ["OMP_WAIT_POLICY"]


def available():
    """Whether convolutions go to the library (``ENABLED``, read on each call, and loaded)."""
    return ENABLED and library() is not None


# ---- matrix products -------------------------------------------------------------------

def _in_place(m):
    """``m`` and its strides in elements, as the library reads a 2-D float32 array in
    place: rows or columns contiguous (a transposed view is read as it lies); any other
    layout is copied first."""
    rows, cols = m.shape
    row_step, col_step = m.strides
    if row_step % 4 == 0 and col_step % 4 == 0:
        row_step, col_step = row_step // 4, col_step // 4
        if (col_step == 1 and row_step >= max(1, cols)) or (row_step == 1 and col_step >= max(1, rows)):
            return m, (row_step, col_step)
    m = np.ascontiguousarray(m)
    return m, (max(1, cols), 1)


class _MatmulPrimitive:
    """A float32 matmul primitive for one pair of shapes and layouts (it keeps its
    descriptors, see _Weights)."""

    __slots__ = ("prim", "impl", "scratch", "a_md", "b_md", "c_md", "bias_md", "_pd")

    def __init__(self, lib, m, k, n, a_strides, b_strides, bias=False, relu=False):
        self.a_md = lib.memory_desc([m, k], a_strides)
        self.b_md = lib.memory_desc([k, n], b_strides)
        self.c_md = lib.memory_desc([m, n], [n, 1])
        self.bias_md = lib.memory_desc([1, n], [n, 1]) if bias else None  # one row, broadcast
        pd = self._pd = _P()
        status = lib.lib.dnnl_matmul_primitive_desc_create(
            ctypes.byref(pd), lib.engine, self.a_md, self.b_md, self.bias_md, self.c_md,
            lib.attr_relu if relu else lib.attr)
        if status == _UNIMPLEMENTED:
            raise _Unimplemented("matmul")
        lib.check(status, "matmul primitive_desc_create")
        self.impl = lib.impl(pd)
        if self.impl.startswith("ref"):
            raise _Unimplemented("matmul")
        self.scratch = _Scratch(lib, pd)
        self.prim = lib.primitive(pd)


_matmuls: dict = {}  # (m, k, n, a strides, b strides, bias, relu) -> _MatmulPrimitive, or None


def matmul(a, b, bias=None, relu=False):
    """``a @ b`` of two 2-D float32 arrays on the library's matmul primitive (threaded
    like its convolutions), transposed views read in place, plus ``bias`` (a float32 row
    of the output's width) and then ReLU when asked; None where it does not serve.

    On the CNN's and the MLP's large products it is 1.2-1.9x OpenBLAS split over the
    intra-op threads (2 cores, median of 40: the MLP's 1024 x 256 x 1024 filter gradient
    1.64 against 2.47 ms, the CNN's 64 x 3136 x 1024 forward 1.9 against 2.3). The
    library's sgemm is level with it where ``a`` is transposed and slower elsewhere (the
    CNN's dy x w^T 2.4 against 2.0 ms, the MLP's 256 x 784 x 1024 1.8 against 1.5)."""
    if not available() or a.dtype != np.float32 or b.dtype != np.float32:
        return None
    m, k = a.shape
    if b.shape[0] != k:
        return None  # numpy raises its own error
    n = b.shape[1]
    if bias is not None and (bias.dtype != np.float32 or bias.shape != (n,)):
        return None
    a, a_strides = _in_place(a)
    b, b_strides = _in_place(b)
    key = (m, k, n, a_strides, b_strides, bias is not None, relu)
    lib = library()
    prim = _matmuls.get(key, False)
    if prim is False:
        lib.stream()  # the thread's team size first (see _Library.stream)
        with _primitives_lock:
            try:
                prim = _MatmulPrimitive(lib, m, k, n, list(a_strides), list(b_strides),
                                        bias is not None, relu)
            except _Unimplemented:
                prim = None
            _matmuls[key] = prim
    if prim is None:
        return None
    out = np.empty((m, n), np.float32)
    args = [(_ARG_SRC, prim.a_md, a), (_ARG_WEIGHTS, prim.b_md, b), (_ARG_DST, prim.c_md, out)]
    if bias is not None:
        args.append((_ARG_BIAS, prim.bias_md, np.ascontiguousarray(bias)))
    lib.execute(prim.prim, args + prim.scratch.args())
    return out


# ---- convolutions ---------------------------------------------------------------------

class _Weights:
    """A filter layout the primitive chose and the reorder between it and HWIO. The
    descriptors a primitive descriptor hands out belong to it, so descriptors stay alive
    as long as this does (for the life of the process: one per geometry)."""

    __slots__ = ("md", "size", "reorder", "scratch", "_pd")

    def __init__(self, lib, plain_md, chosen_md, to_plain):
        self.md = chosen_md
        self.size = lib.size(chosen_md)
        self.reorder = self.scratch = self._pd = None
        if lib.lib.dnnl_memory_desc_equal(plain_md, chosen_md):
            return  # already HWIO: the array itself is passed
        pd = lib.reorder_pd(chosen_md, plain_md) if to_plain else lib.reorder_pd(plain_md, chosen_md)
        self._pd, self.reorder, self.scratch = pd, lib.primitive(pd), _Scratch(lib, pd)


class _Scratch:
    """The scratch memory a primitive wants: its descriptor and size (0: none)."""

    __slots__ = ("md", "size")

    def __init__(self, lib, pd):
        self.md = lib.query_md(pd, _QUERY_SCRATCHPAD)
        self.size = lib.size(self.md) if self.md.value else 0

    def args(self):
        """The scratchpad argument, a fresh buffer (one per call: calls on other threads
        never share it), or none."""
        if not self.size:
            return []
        return [(_ARG_SCRATCHPAD, self.md, np.empty(self.size, np.uint8))]


class _ConvPrimitive:
    """One convolution primitive of one geometry and direction, ready to run; it keeps
    its descriptors (see _Weights)."""

    __slots__ = ("prim", "impl", "scratch", "weights", "x_md", "y_md", "w_plain", "bias_md",
                 "_pds")

    def __init__(self, lib, kind, geometry, bias=False, relu=False):
        """``bias``, ``relu`` (forward only): the primitive adds a bias per output channel,
        then applies ReLU, as it writes each output block (TensorFlow's fused Conv2D).
        ``groups`` (the geometry's last entry) above 1: a depthwise convolution, one group
        per input channel, whose filter is TF's [kh, kw, ci, co / ci]."""
        n, h, w, ci, kh, kw, co, sh, sw, oh, ow, pt, pl, pb, pr, groups = geometry
        self.x_md = lib.memory_desc([n, ci, h, w], [h * w * ci, 1, w * ci, ci])
        self.y_md = lib.memory_desc([n, co, oh, ow], [oh * ow * co, 1, ow * co, co])
        if groups == 1:  # HWIO
            self.w_plain = lib.memory_desc([co, ci, kh, kw], [1, co, kw * ci * co, ci * co])
            w_any = lib.memory_desc([co, ci, kh, kw])
        else:  # [kh, kw, ci, m]: group g's output j at (g * m + j), its one input channel g
            m = co // groups
            dims = [groups, m, ci // groups, kh, kw]
            self.w_plain = lib.memory_desc(dims, [m, 1, co, kw * co, co])
            w_any = lib.memory_desc(dims)
        strides, dilations = _Dims(sh, sw), _Dims(0, 0)
        pad_l, pad_r = _Dims(pt, pl), _Dims(pb, pr)
        self.bias_md = lib.memory_desc([co], [1]) if bias else None
        fwd = _P()
        status = lib.lib.dnnl_convolution_forward_primitive_desc_create(
            ctypes.byref(fwd), lib.engine, _FORWARD_TRAINING, _CONVOLUTION_DIRECT,
            self.x_md, w_any, self.bias_md, self.y_md, strides, dilations, pad_l, pad_r,
            lib.attr_relu if relu else lib.attr)
        pd = fwd
        if status == 0 and kind == "input":
            pd = _P()
            status = lib.lib.dnnl_convolution_backward_data_primitive_desc_create(
                ctypes.byref(pd), lib.engine, _CONVOLUTION_DIRECT, self.x_md, w_any,
                self.y_md, strides, dilations, pad_l, pad_r, fwd, lib.attr)
        elif status == 0 and kind == "filter":
            pd = _P()
            status = lib.lib.dnnl_convolution_backward_weights_primitive_desc_create(
                ctypes.byref(pd), lib.engine, _CONVOLUTION_DIRECT, self.x_md, w_any, None,
                self.y_md, strides, dilations, pad_l, pad_r, fwd, lib.attr)
        self._pds = (fwd, pd)
        if status == _UNIMPLEMENTED:
            raise _Unimplemented(kind)
        lib.check(status, f"convolution {kind} primitive_desc_create")
        self.impl = lib.impl(pd)
        if self.impl.startswith("ref"):  # the library's plain loops: ours are faster
            raise _Unimplemented(kind)
        chosen = lib.query_md(pd, _QUERY_DIFF_WEIGHTS if kind == "filter" else _QUERY_WEIGHTS)
        self.weights = _Weights(lib, self.w_plain, chosen, to_plain=kind == "filter")
        self.scratch = _Scratch(lib, pd)
        self.prim = lib.primitive(pd)


class _Unimplemented(Exception):
    pass


# Input gradients of filters over fewer input channels than this stay with our kernels:
# the library's one for the CNN's first layer (1 -> 32, 5x5, 64 x 28x28) took 3.5 ms, a
# twelfth of its forward rate.
MIN_INPUT_GRAD_CHANNELS = 8

_primitives: dict = {}  # (kind, geometry) -> _ConvPrimitive, or None where not served
_primitives_lock = threading.Lock()


def cached_primitive(cache, key, build):
    """``cache[key]``, made by ``build(library)`` on first use (under one lock, for the
    convolutions, batch norm, LRN and 3-D convolutions alike), or None where the library
    does not implement it."""
    try:
        return cache[key]
    except KeyError:
        pass
    lib = library()
    lib.stream()  # the thread's team size first (see _Library.stream)
    with _primitives_lock:
        if key not in cache:
            try:
                cache[key] = build(lib)
            except _Unimplemented:
                cache[key] = None
        return cache[key]


def _primitive(kind, g, bias=False, relu=False):
    pb = max(0, (g.oh - 1) * g.sh + g.kh - g.h - g.pt)
    pr = max(0, (g.ow - 1) * g.sw + g.kw - g.w - g.pl)
    geometry = (g.n, g.h, g.w, g.ci, g.kh, g.kw, g.co, g.sh, g.sw, g.oh, g.ow, g.pt, g.pl, pb, pr,
                getattr(g, "groups", 1))

    def build(lib):
        conv = _ConvPrimitive(lib, kind, geometry, bias, relu)
        log.debug("oneDNN %s %s: %s", kind, geometry, conv.impl)
        return conv

    return cached_primitive(_primitives, (kind, geometry, bias, relu), build)


def _serves(g, *arrays):
    """Whether the library takes a convolution of geometry ``g`` over ``arrays``: all
    float32 (the registry calls with one dtype; a mismatch would be read as wrong bytes),
    a non-empty output, and the library loaded."""
    return (all(a.dtype == np.float32 for a in arrays) and g.n > 0 and g.oh > 0 and g.ow > 0
            and available())


# Filters up to this size are reordered on the calling thread alone: a copy of the CNN's
# conv2 filter (200 KB) takes microseconds, waking the OpenMP team about 100.
REORDER_ALONE_BYTES = 4 << 20


def _run(lib, conv, args, weights_array, weights_arg):
    """Runs ``conv`` with its filter argument ``weights_arg`` (the HWIO array
    ``weights_array``) reordered in or out as the primitive's layout needs."""
    wt = conv.weights
    if wt.reorder is None:
        lib.execute(conv.prim, args + [(weights_arg, conv.w_plain, weights_array)]
                    + conv.scratch.args())
        return
    blocked = np.empty(wt.size // 4, np.float32)
    alone = wt.size <= REORDER_ALONE_BYTES
    if weights_arg == _ARG_WEIGHTS:  # the filter goes in
        lib.execute(wt.reorder, [(_ARG_SRC, conv.w_plain, weights_array),
                                 (_ARG_DST, wt.md, blocked)] + wt.scratch.args(), alone=alone)
    lib.execute(conv.prim, args + [(weights_arg, wt.md, blocked)] + conv.scratch.args())
    if weights_arg == _ARG_DIFF_WEIGHTS:  # the filter gradient comes out
        lib.execute(wt.reorder, [(_ARG_SRC, wt.md, blocked),
                                 (_ARG_DST, conv.w_plain, weights_array)] + wt.scratch.args(),
                    alone=alone)


def conv2d(g, x, w, bias=None, relu=False):
    """Conv2D of the NHWC ``x`` by the HWIO ``w`` (geometry ``g``, a conv_fast.ConvPlan),
    plus ``bias`` (a float32 vector of the output channels) and then ReLU when asked, or
    None where the library does not serve it."""
    if not _serves(g, x, w) or (bias is not None and (
            bias.dtype != np.float32 or bias.shape != (g.co,))):
        return None
    conv = _primitive("forward", g, bias is not None, relu)
    if conv is None:
        return None
    args = [(_ARG_SRC, conv.x_md, np.ascontiguousarray(x))]
    if bias is not None:
        args.append((_ARG_BIAS, conv.bias_md, np.ascontiguousarray(bias)))
    out = np.empty((g.n, g.oh, g.ow, g.co), np.float32)
    args.append((_ARG_DST, conv.y_md, out))
    _run(library(), conv, args, np.ascontiguousarray(w), _ARG_WEIGHTS)
    return out


def conv2d_backprop_input(g, w, dy):
    """The input gradient of a Conv2D (geometry ``g``) from its filter and output
    gradient, or None where the library does not serve it."""
    if not _serves(g, w, dy) or (g.ci < MIN_INPUT_GRAD_CHANNELS and getattr(g, "groups", 1) == 1):
        return None
    conv = _primitive("input", g)
    if conv is None:
        return None
    dx = np.empty((g.n, g.h, g.w, g.ci), np.float32)
    _run(library(), conv, [(_ARG_DIFF_DST, conv.y_md, np.ascontiguousarray(dy)),
                           (_ARG_DIFF_SRC, conv.x_md, dx)],
         np.ascontiguousarray(w), _ARG_WEIGHTS)
    return dx


def conv2d_backprop_filter(g, x, dy):
    """The filter gradient of a Conv2D (geometry ``g``) from its input and output
    gradient, as HWIO ([kh, kw, ci, co / ci] for a depthwise one), or None where the
    library does not serve it."""
    if not _serves(g, x, dy):
        return None
    conv = _primitive("filter", g)
    if conv is None:
        return None
    dw = np.empty((g.kh, g.kw, g.ci, g.co // getattr(g, "groups", 1)), np.float32)
    _run(library(), conv, [(_ARG_SRC, conv.x_md, np.ascontiguousarray(x)),
                           (_ARG_DIFF_DST, conv.y_md, np.ascontiguousarray(dy))],
         dw, _ARG_DIFF_WEIGHTS)
    return dw


def implementation(kind, g):
    """The library's name for the implementation serving ``kind`` ("forward", "input",
    "filter") at geometry ``g``, or None (for tests and bench reports)."""
    if not available():
        return None
    conv = _primitive(kind, g)
    return None if conv is None else conv.impl
