"""Graph-level fusion of elementwise chains into one parallel Numba kernel.

``fuse(steps, ...)`` rewrites a plan's steps (see dtf.runtime.executor.build_plan): every
tree of whitelisted elementwise ops (dtf.kernels.cpu.fused.TEMPLATES) on float32/float64
whose inner results are used by exactly one op of the tree, and by nothing else (not
fetched, not fed, no control edge to them, no other consumer such as a _Send to another
device), becomes one step at the position of its last op. That step carries the last op's
name, so errors and control edges on it are unchanged, and shows as e.g.
"Fused(Mul,Add,Relu)" in step stats.

A group may also start with a head (``HEADS``: a matmul) whose result only the group
reads: its elementwise tail (e.g. BiasAdd and Relu of a dense layer) then runs as one
serial pass over the matmul's fresh output, in place (``TailStep``), instead of one
allocation and one pass per op.

Whether fusing pays is decided per call from the inputs, which plans do not know
statically: when every input has the group's dtype and either the output's shape, no
dimensions at all (scalars) or the output's trailing dimensions (a row, as a bias; no
other broadcasting), and the output has at least ``MIN_ELEMENTS`` elements
(``TAIL_MIN_ELEMENTS`` for a tail), the generated kernel runs (one pass over memory, all
cores; one core for a tail). Otherwise, and until Numba's loops have loaded (see
dtf.kernels.cpu.jit_loading, which counts the time of these stand-ins towards loading them),
the group's original kernels run one after another, as unfused, for a call overhead of
about a microsecond.

This module plans (which steps form a group) and runs the groups; the code generation
lives with the kernels, in dtf.kernels.cpu.fused, and only ever sees op types that are keys
of its template table and integer indices: see there for why and how.

``DTF_FUSION=0`` turns fusion off; ``DTF_FUSION_MIN_ELEMENTS`` and
``DTF_FUSION_TAIL_MIN_ELEMENTS`` set the size thresholds (all read at import; tests may
set the module attributes instead).
"""
from __future__ import annotations

import math
import os
import sys
import threading
from collections import defaultdict

import numpy as np

from dtf.framework.graph_def import NodeDef
from dtf.kernels.cpu import epilogues, jit_loading

ENABLED = os.environ.get("DTF_FUSION", "1") != "0"
# Below ~64K elements numpy's per-op passes stay in cache and a Numba call's overhead
# (a few microseconds, plus waking the thread pool) eats the gain.
MIN_ELEMENTS = int(os.environ.get("DTF_FUSION_MIN_ELEMENTS", 1 << 16))
# A tail's serial pass wakes no threads; it pays once it saves an allocation and a pass
# more than a Numba call costs (about a microsecond).
TAIL_MIN_ELEMENTS = int(os.environ.get("DTF_FUSION_TAIL_MIN_ELEMENTS", 1 << 12))
_DTYPES = ("float32", "float64")
# Ops that always return a fresh array (BLAS's output) which an elementwise tail may then
# overwrite in place: the tail costs one pass over it and no allocation.
HEADS = ("MatMul", "BatchMatMulV2", "Conv2D")
# Templates that hold only under some attributes: BiasAdd is an Add of a row (see
# fused.source) only when its channel axis is the last one.
_ATTR_RULES = {"BiasAdd": lambda attrs: attrs.get("data_format", "NHWC") != "NCHW"}


class FusedStep:
    """The compute of a fused group: ``members`` are ``(compute, args, node)`` in
    topological order, where an argument index below ``n_inputs`` is a group input and
    ``n_inputs + k`` the result of member k; the last member is the group's output."""

    __slots__ = ("members", "n_inputs", "dtype", "ops", "_kernels", "_spare", "_lock")

    def __init__(self, members, n_inputs, dtype):
        self.members = members
        self.n_inputs = n_inputs
        self.dtype = np.dtype(dtype)
        self.ops = tuple((node.op, args) for _, args, node in members)
        self._kernels: dict = {}  # input layouts -> compiled kernel
        self._spare = None  # the last output, reused once nothing else refers to it
        self._lock = threading.Lock()

    def __call__(self, ctx, *xs):
        shape, kinds = _layout(xs, self.dtype)
        if shape is None or math.prod(shape) < MIN_ELEMENTS:
            return _run_members(ctx, list(xs), self.members)
        if not jit_loading.loaded():
            return jit_loading.run_stand_in(_run_members, ctx, list(xs), self.members, key=self)
        out = self._output(shape)
        self._kernel(kinds, True)(out.reshape(-1), *[x.reshape(-1) for x in xs])
        self._spare = out
        return out

    def _kernel(self, kinds, parallel):
        kernel = self._kernels.get(kinds)
        if kernel is None:
            from dtf.kernels.cpu import fused  # the generated module imports numba

            kernel = self._kernels[kinds] = fused.load(self.dtype.name, kinds, self.ops, parallel)
        return kernel

    def _output(self, shape):
        """The previous output when no one holds it any more (this frame's two
        references, the name and getrefcount's argument, are all), else a new array:
        the page faults of a fresh large array cost about as much as the kernel."""
        with self._lock:  # two steps running this plan never take the same buffer
            spare, self._spare = self._spare, None
        if spare is not None and spare.shape == shape and sys.getrefcount(spare) == 2:
            return spare
        return np.empty(shape, self.dtype)


class TailStep(FusedStep):
    """A fused group whose first member is a head (``HEADS``): the head's kernel runs,
    then the elementwise rest as one serial pass over the head's output, in place when
    nothing else refers to it. Serial because the pass follows a BLAS call: OpenBLAS's
    workers spin (sched_yield) for a while after returning, and a parallel kernel then
    shares both cores with them (relu(x@w+b) at 256x512x256 on 2 cores: 8 ms with a
    parallel tail, 0.58 ms for the matmul alone). Measured per step, relu(x@w+b) at
    64x64x128 / 256x512x256 / 1024^3: unfused 34 us / 743 us / 18.2 ms, fused 33 us /
    662 us / 16.1 ms."""

    __slots__ = ("tail_inputs", "epilogue_relu")

    def __init__(self, members, n_inputs, dtype):
        super().__init__(members, n_inputs, dtype)
        # The kernel's inputs: the group inputs the tail reads, then the head's result.
        self.tail_inputs = sorted({a for _, args, _ in members[1:] for a in args if a < n_inputs})
        n = len(self.tail_inputs)
        index = {a: j for j, a in enumerate(self.tail_inputs)}
        index.update((n_inputs + k, n + k) for k in range(len(members)))
        self.ops = tuple((node.op, tuple(index[a] for a in args)) for _, args, node in members[1:])
        # A bias (+ ReLU) tail that the head's own kernel can apply (epilogues.plan).
        self.epilogue_relu = epilogues.plan(members[0][2].op, self.ops, n, self.dtype)

    def __call__(self, ctx, *xs):
        compute, args, node = self.members[0]
        ins = [xs[a] for a in args]
        try:
            if self.epilogue_relu is not None:
                y = epilogues.run(node, ins, xs[self.tail_inputs[0]], self.epilogue_relu)
                if y is not None:
                    return y
            y = compute(ctx, *ins)
        except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
            raise _failure(e, node, ins, ctx) from e
        # Only the head's kernel could still hold a reference to (or a view of) its result;
        # two references are this frame's name and getrefcount's argument.
        owned = (type(y) is np.ndarray and sys.getrefcount(y) == 2 and y.flags.owndata
                 and y.flags.c_contiguous and y.flags.writeable)
        ins = [xs[j] for j in self.tail_inputs]
        ins.append(y)
        shape, kinds = _layout(ins, self.dtype)
        if shape is None or math.prod(shape) < TAIL_MIN_ELEMENTS:
            return _run_members(ctx, list(xs) + [y], self.members[1:])
        if not jit_loading.loaded():
            return jit_loading.run_stand_in(_run_members, ctx, list(xs) + [y], self.members[1:],
                                            key=self)
        if owned and shape == y.shape:
            out, kinds = y, kinds[:-1] + "o"  # in place: the kernel reads ``out`` itself
            del ins[-1]
        else:
            out = np.empty(shape, self.dtype)
        self._kernel(kinds, False)(out.reshape(-1), *[x.reshape(-1) for x in ins])
        return out


def _layout(xs, dtype):
    """(output shape, input layouts as in fused.source) when a kernel applies, else
    (None, None): another dtype, only scalars, or broadcasting other than of scalars and
    of rows (arrays of the output's trailing dimensions, all of one shape). Plain loops:
    this runs on every call, and for small tails it is a visible part of the cost."""
    shape = ()
    for x in xs:
        if type(x) is not np.ndarray or x.dtype != dtype:
            return None, None
        if len(x.shape) > len(shape):
            shape = x.shape
    if not shape:
        return None, None
    row = None
    kinds = ""
    for x in xs:
        s = x.shape
        if s == shape:
            kinds += "a"
        elif not s:
            kinds += "s"
        elif row in (None, s) and shape[len(shape) - len(s):] == s:
            row = s
            kinds += "r"
        else:
            return None, None
    return shape, kinds


def _run_members(ctx, vals, members):
    """Runs members one after another, as unfused, appending their results to ``vals``;
    the last result."""
    for compute, args, node in members:
        ins = [vals[a] for a in args]
        try:
            vals.append(compute(ctx, *ins))
        except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
            raise _failure(e, node, ins, ctx) from e
    return vals[-1]


def _failure(e, node, ins, ctx):
    from dtf.runtime.executor import _op_failure  # the executor imports this module

    return _op_failure(e, node, ins, ctx)


def fuse(steps, feed_slots, fetch_slots, device_type="CPU"):
    """The plan's steps with every fusable group of two or more ops replaced by one
    FusedStep; ``steps`` are build_plan's ``(compute, ins, out, nout, node)`` tuples."""
    if not ENABLED or device_type != "CPU":
        return steps
    # Imported here: plans are built after the CPU kernels load, ``import dtf`` is not.
    from dtf.kernels.cpu.fused import TEMPLATES
    from dtf.runtime import fusion_norm, fusion_pool, fusion_softmax

    pinned = set(feed_slots) | set(fetch_slots)
    steps = fusion_norm.fuse_relu_grads(fusion_norm.fuse_relu_tails(steps, pinned), pinned)
    steps = fusion_pool.fuse_pool_relu_grads(steps, pinned)
    steps = fusion_softmax.fuse_softmax_grads(steps, pinned)
    parent = _absorbing_consumers(steps, pinned, TEMPLATES)
    groups = _groups(steps, parent)
    if not groups:
        return steps
    member_of = {i: root for root, members in groups.items() for i in members}
    out = []
    for i, step in enumerate(steps):
        root = member_of.get(i)
        if root is None:
            out.append(step)
        elif root == i:
            out.append(_fused_step(steps, groups[root]))
    return out


def _absorbing_consumers(steps, pinned, templates):
    """step index -> index of the fusable step that absorbs its result, for every fusable
    step or head whose only use is one fusable step of the same dtype and device."""
    kernel_step = {}
    for i, step in enumerate(steps):
        kernel_step[step[4].name] = i  # a node's deref steps come before its kernel step
    fusable = {i for i in kernel_step.values() if _fusable(steps[i], templates)}
    heads = {i for i in kernel_step.values() if steps[i][4].op in HEADS and _one_float_output(steps[i])}
    readers = defaultdict(set)
    for i, step in enumerate(steps):
        for s in step[1]:
            readers[s].add(i)
    control_targets = {c for step in steps for c in step[4].control_inputs}
    parent = {}
    for i in fusable | heads:
        _, _, out, _, node = steps[i]
        users = readers.get(out, ())
        if len(users) != 1 or out in pinned or node.name in control_targets:
            continue
        (j,) = users
        other = steps[j][4]
        if j in fusable and other.dtype_key == node.dtype_key and other.device == node.device:
            parent[i] = j
    return parent


def _groups(steps, parent):
    """root step index -> the group's step indices, its head (if any) first, then in plan
    order; only groups of two or more ops. A group keeps one head: another one stays
    outside, its result an input of the group."""
    children = defaultdict(list)
    for child, consumer in parent.items():
        children[consumer].append(child)
    groups = {}
    for root in children:
        if root in parent:
            continue
        members = sorted(_subtree(root, children))
        heads = [i for i in members if steps[i][4].op in HEADS]
        members = heads[:1] + [i for i in members if i not in heads]
        if len(members) > 1:
            groups[root] = members
    return groups


def _fusable(step, templates) -> bool:
    _, ins, _, _, node = step
    template = templates.get(node.op)
    rule = _ATTR_RULES.get(node.op)
    return (template is not None and len(ins) == template[0] and _one_float_output(step)
            and (rule is None or rule(node.attrs)))


def _one_float_output(step) -> bool:
    _, _, _, nout, node = step
    dtype = node.dtype_key
    return (nout == 1 and getattr(dtype, "name", None) in _DTYPES
            and [getattr(d, "name", None) for d in node.output_dtypes] == [dtype.name])


def _subtree(root, children):
    stack, seen = [root], []
    while stack:
        i = stack.pop()
        seen.append(i)
        stack.extend(children.get(i, ()))
    return seen


def _fused_step(steps, indices):
    """One step computing the group ``indices`` (topologically ordered, root last; a
    head first, which reads only group inputs)."""
    temp_of = {steps[i][2]: k for k, i in enumerate(indices)}  # out slot -> member number
    input_of: dict = {}  # external slot -> input number
    names, members, controls = [], [], []
    for i in indices:
        compute, ins, _, _, node = steps[i]
        for pos, s in enumerate(ins):
            if s not in temp_of and s not in input_of:
                input_of[s] = len(input_of)
                names.append(node.inputs[pos])
        members.append((compute, ins, node))
        controls.extend(c for c in node.control_inputs if c not in controls)
    n_in = len(input_of)
    members = [(compute, tuple(input_of[s] if s in input_of else n_in + temp_of[s] for s in ins), node)
               for compute, ins, node in members]
    root = steps[indices[-1]][4]
    node = NodeDef(root.name, "Fused(" + ",".join(m[2].op for m in members) + ")", names, controls,
                   root.device, {}, list(root.output_dtypes))
    kind = TailStep if steps[indices[0]][4].op in HEADS else FusedStep
    step = kind(members, n_in, root.dtype_key.name)
    return step, tuple(input_of), steps[indices[-1]][2], 1, node
