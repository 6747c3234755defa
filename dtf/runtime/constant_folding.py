"""A plan's constant folding, when the plan is built: what constants decide is computed
once, not every step.

Three things, in one pass over the steps in order, then one back:

- A stateless op whose inputs are all constant values is computed now; a small result
  becomes a constant of the plan (``fold``).
- A large result is not kept, but when all its elements are equal (zeros, ones, a mask
  over constant ids) it is remembered as a broadcast view of one element, for the folding
  of the ops after it. Its step still runs, unless nothing reads it in the end.
- A select whose condition folds to all true or all false reads only the branch it picks:
  the gradient of an unsorted segment sum selects ``gathered`` where ``ids >= 0`` against
  ``zeros_like(gathered)``, and with constant ids the mask, the zeros and the select ran
  every step (0.9 of the 1.0 ms of that gradient on 4096x256 floats), where TF's graph
  optimizer drops them. The steps left unread then are dropped (``drop_unread``).
"""
from __future__ import annotations

import numpy as np

from dtf.framework.op_registry import get_op_def, has_op
from dtf.runtime.steps import Step

# The largest value a folded step may keep in its plan for good.
FOLD_MAX_BYTES = 64 << 10
# Stateless ops that still must run every step: their value depends on the file system
# (MatchingFiles), comes from user code (PyFuncStateless), or they make a resource.
NEVER_FOLDED = frozenset({"MatchingFiles", "PyFuncStateless", "TensorArrayNew"})
SELECTS = frozenset({"Select", "SelectV2"})


def split_constants(steps, fold=False, fetch_slots=(), targets=()):
    """(steps to run, constant steps): a step whose kernel has a ``constant_output`` and
    no control inputs (one with them would let its consumers run before what it waits
    for) need not run; its value is in the plan's initial slots. With ``fold``, so is a
    stateless op's whose inputs are all such values (see _fold), a select whose condition
    is uniform reads only its branch, and the steps that leaves unread are dropped
    (never one of ``targets``, node names, nor one whose output ``fetch_slots`` name)."""
    run, constants, known = [], [], {}
    uniform: dict = {}  # slot -> a large all-equal value, as a broadcast view of one element
    narrowed = False
    for st in steps:
        if fold and st.node.op in SELECTS and len(st.ins) == 3 and not st.node.control_inputs:
            picked = _picking_select(st, known, uniform)  # (also a target's, run unread)
            if picked is not None:
                st, narrowed = picked, True
        if st.nout == 1 and st.keep and not st.node.control_inputs:
            if fold and not hasattr(st.compute, "constant_output"):
                st = _fold(st, known, uniform)
            if hasattr(st.compute, "constant_output"):
                constants.append(st)
                known[st.out] = st.compute.constant_output
                continue
        run.append(st)
    if narrowed:
        run = drop_unread(run, fetch_slots, targets)
    return run, constants


def _fold(st, known, uniform):
    """``st`` as a constant step when its op is stateless, all its inputs are constant
    values (``known``: slot -> value; ``uniform``: the large all-equal ones) and its
    kernel computes it now without a step (it is called without a context), else ``st``
    as it was. Why: of a word2vec worker step's ~225 kernels, about 50 (Reshape, Pack,
    ConcatV2, Fill, Range, StridedSlice...) recompute the same small shapes and index
    arrays from constants every step, each a kernel call and a dataflow turn; TF's
    constant folding removes them too. A kernel that fails here runs, and fails, in the
    step as before. A large all-equal result goes to ``uniform`` (the step stays)."""
    if not st.ins or any(i not in known and i not in uniform for i in st.ins):
        return st
    op = st.node.op
    if op in NEVER_FOLDED or not has_op(op) or get_op_def(op).stateful:  # a fused group: no op
        return st
    try:
        with np.errstate(all="ignore"):
            value = st.compute(None, *[_constant_value(i, known, uniform) for i in st.ins])
    except Exception:  # noqa: BLE001 - the step runs instead, raising where it always did
        return st
    if type(value) is not np.ndarray:
        return st
    if value.nbytes > FOLD_MAX_BYTES:
        one = _one_value(value)
        if one is not None:
            uniform[st.out] = np.broadcast_to(one, value.shape)
        return st
    if value.size > 1 and 0 in value.strides:  # a view of a uniform input: own the data
        value = value.copy()

    def compute(ctx, *inputs):
        return value

    compute.constant_output = value
    return Step(compute, st.ins, st.out, 1, st.node)


# The largest result whose elements are compared to find it uniform.
UNIFORM_MAX_BYTES = 64 << 20


def _one_value(value):
    """The element every element of ``value`` equals (a 0-d array), else None (NaN never
    equals itself, so a NaN fill is not uniform)."""
    if value.size == 0 or value.dtype == object or value.nbytes > UNIFORM_MAX_BYTES:
        return None
    one = np.array(value.flat[0], dtype=value.dtype)
    with np.errstate(all="ignore"):
        return one if (value == one).all() else None


def _constant_value(slot, known, uniform):
    if slot in known:
        return known[slot]
    return uniform.get(slot)


def _picking_select(st, known, uniform):
    """A Step for the select ``st`` that reads only the branch its condition picks, when
    the condition is constant and all true or all false and the other branch is constant
    too (its shape, and the condition's, decide the output's); else None. The kernel
    still runs, on the constants, whenever the shapes would not make the branch itself the
    output (broadcasting, a row condition, a mismatch and its error)."""
    cond_slot, then_slot, else_slot = st.ins
    cond = _constant_value(cond_slot, known, uniform)
    if cond is None or cond.dtype != np.bool_ or cond.size == 0:
        return None
    if cond.all():
        branch, other_slot, picks_then = then_slot, else_slot, True
    elif not cond.any():
        branch, other_slot, picks_then = else_slot, then_slot, False
    else:
        return None
    other = _constant_value(other_slot, known, uniform)
    if other is None or branch in known or branch in uniform:
        return None  # (a constant branch: the select folds as any op over constants)
    kernel, v2 = st.compute, st.node.op == "SelectV2"

    def select(ctx, x):
        if x.shape == other.shape and x.dtype == other.dtype:
            if cond.shape == x.shape or (v2 and _broadcasts_to(cond.shape, x.shape)):
                return x
        return kernel(ctx, cond, x, other) if picks_then else kernel(ctx, cond, other, x)

    return Step(select, (branch,), st.out, 1, st.node, keep=st.keep)


def _broadcasts_to(shape, target):
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


def drop_unread(steps, fetch_slots, targets):
    """The steps less those whose outputs nothing reads any more: stateless ops (not
    receives, not fused groups, not ``targets``, not fetched, not waited for through a
    control edge) that only fed what folding took away."""
    control_waited = {c for st in steps for c in st.node.control_inputs}
    keep_nodes = set(targets) | control_waited
    readers: dict = {}
    for st in steps:
        for s in st.ins:
            readers[s] = readers.get(s, 0) + 1
    for s in fetch_slots:
        readers[s] = readers.get(s, 0) + 1
    dropped = set()
    for i in range(len(steps) - 1, -1, -1):  # consumers come after their producers
        st = steps[i]
        if not st.keep or not st.nout or any(readers.get(st.out + k) for k in range(st.nout)):
            continue
        op = st.node.op
        if (st.node.name in keep_nodes or op.startswith("_") or not has_op(op)
                or get_op_def(op).stateful):
            continue
        dropped.add(i)
        for s in st.ins:
            readers[s] -= 1
    return [st for i, st in enumerate(steps) if i not in dropped]
