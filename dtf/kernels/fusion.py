"""Graph-level fusion of elementwise chains into one parallel Numba kernel.

``fuse(steps, ...)`` rewrites a plan's steps (see dtf.runtime.executor.build_plan): every
tree of whitelisted elementwise ops (dtf.kernels.cpu.fused.TEMPLATES) on float32/float64
whose inner results are used by exactly one op of the tree, and by nothing else (not
fetched, not fed, no control edge to them, no other consumer such as a _Send to another
device), becomes one step at the position of its last op. That step carries the last op's
name, so errors and control edges on it are unchanged, and shows as e.g.
"Fused(Mul,Add,Relu)" in step stats.

Whether fusing pays is decided per call from the inputs, which plans do not know
statically: when every input has the group's dtype and either one common shape or no
dimensions at all (scalars; no other broadcasting), and the output has at least
``MIN_ELEMENTS`` elements, the generated kernel runs (one pass over memory, all cores).
Otherwise the group's original kernels run one after another, as unfused, for a call
overhead of about a microsecond.

The code generation only ever sees op types that are keys of the template table and
integer indices: see dtf.kernels.cpu.fused for why and how.

``DTF_FUSION=0`` turns fusion off; ``DTF_FUSION_MIN_ELEMENTS`` sets the size threshold
(both read at import; tests may set the module attributes instead).
"""
from __future__ import annotations

import math
import os
import sys
import threading
from collections import defaultdict

import numpy as np

from dtf.framework.graph_def import NodeDef

ENABLED = os.environ.get("DTF_FUSION", "1") != "0"
# Below ~64K elements numpy's per-op passes stay in cache and a Numba call's overhead
# (a few microseconds, plus waking the thread pool) eats the gain.
MIN_ELEMENTS = int(os.environ.get("DTF_FUSION_MIN_ELEMENTS", 1 << 16))
_DTYPES = ("float32", "float64")


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
        self._kernels: dict = {}  # scalar-input mask -> compiled kernel
        self._spare = None  # the last output, reused once nothing else refers to it
        self._lock = threading.Lock()

    def __call__(self, ctx, *xs):
        shape, scalars = self._layout(xs)
        if shape is None:
            return self._unfused(ctx, xs)
        kernel = self._kernels.get(scalars)
        if kernel is None:
            from dtf.kernels.cpu import fused  # the generated module imports numba

            kernel = self._kernels[scalars] = fused.load(self.dtype.name, scalars, self.ops)
        out = self._output(shape)
        kernel(out.reshape(-1), *[x.reshape(-1) for x in xs])
        self._spare = out
        return out

    def _output(self, shape):
        """The previous output when no one holds it any more (this frame's two
        references, the name and getrefcount's argument, are all), else a new array:
        the page faults of a fresh large array cost about as much as the kernel."""
        with self._lock:  # two steps running this plan never take the same buffer
            spare, self._spare = self._spare, None
        if spare is not None and spare.shape == shape and sys.getrefcount(spare) == 2:
            return spare
        return np.empty(shape, self.dtype)

    def _layout(self, xs):
        """(common shape, which inputs are scalars) when the kernel applies, else
        (None, None): wrong dtype, broadcasting beyond scalars, or too small to pay."""
        shape = None
        scalars = []
        for x in xs:
            if type(x) is not np.ndarray or x.dtype != self.dtype:
                return None, None
            scalars.append(x.ndim == 0)
            if x.ndim:
                if shape is None:
                    shape = x.shape
                elif x.shape != shape:
                    return None, None
        if shape is None or math.prod(shape) < MIN_ELEMENTS:
            return None, None
        return shape, tuple(scalars)

    def _unfused(self, ctx, xs):
        vals = list(xs)
        for compute, args, node in self.members:
            ins = [vals[a] for a in args]
            try:
                vals.append(compute(ctx, *ins))
            except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
                from dtf.runtime.executor import _op_failure

                raise _op_failure(e, node, ins, ctx) from e
        return vals[-1]


def fuse(steps, feed_slots, fetch_slots, device_type="CPU"):
    """The plan's steps with every fusable group of two or more ops replaced by one
    FusedStep; ``steps`` are build_plan's ``(compute, ins, out, nout, node)`` tuples."""
    if not ENABLED or device_type != "CPU":
        return steps
    # Imported here: plans are built after the CPU kernels load, ``import dtf`` is not.
    from dtf.kernels.cpu.fused import TEMPLATES

    parent = _absorbing_consumers(steps, set(feed_slots) | set(fetch_slots), TEMPLATES)
    if not parent:
        return steps
    children = defaultdict(list)
    for child, consumer in parent.items():
        children[consumer].append(child)
    member_of = {}  # step index -> root step index of its group
    for root in children:
        if root not in parent:
            for i in _subtree(root, children):
                member_of[i] = root
    out = []
    for i, step in enumerate(steps):
        root = member_of.get(i)
        if root is None:
            out.append(step)
        elif root == i:
            out.append(_fused_step(steps, sorted(j for j, r in member_of.items() if r == root)))
    return out


def _absorbing_consumers(steps, pinned, templates):
    """step index -> index of the fusable step that absorbs its result, for every fusable
    step whose only use is one other fusable step of the same dtype and device."""
    kernel_step = {}
    for i, step in enumerate(steps):
        kernel_step[step[4].name] = i  # a node's deref steps come before its kernel step
    fusable = {i for i in kernel_step.values() if _fusable(steps[i], templates)}
    readers = defaultdict(set)
    for i, step in enumerate(steps):
        for s in step[1]:
            readers[s].add(i)
    control_targets = {c for step in steps for c in step[4].control_inputs}
    parent = {}
    for i in fusable:
        _, _, out, _, node = steps[i]
        users = readers.get(out, ())
        if len(users) != 1 or out in pinned or node.name in control_targets:
            continue
        (j,) = users
        other = steps[j][4]
        if j in fusable and other.dtype_key == node.dtype_key and other.device == node.device:
            parent[i] = j
    return parent


def _fusable(step, templates) -> bool:
    _, ins, _, nout, node = step
    template = templates.get(node.op)
    dtype = node.dtype_key
    return (template is not None and nout == 1 and len(ins) == template[0]
            and getattr(dtype, "name", None) in _DTYPES
            and [getattr(d, "name", None) for d in node.output_dtypes] == [dtype.name])


def _subtree(root, children):
    stack, seen = [root], []
    while stack:
        i = stack.pop()
        seen.append(i)
        stack.extend(children.get(i, ()))
    return seen


def _fused_step(steps, indices):
    """One step computing the group ``indices`` (topologically ordered, root last)."""
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
    step = FusedStep(members, n_in, root.dtype_key.name)
    return step, tuple(input_of), steps[indices[-1]][2], 1, node
