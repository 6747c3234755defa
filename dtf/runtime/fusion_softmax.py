"""Plan rewrite: the gradient of a softmax or log-softmax, built by the graph as four ops,
computed in one step by oneDNN's softmax backward (dtf.kernels.cpu.onednn_softmax).

TF1's gradient of y = softmax(x) along the last axis is (g - sum(g * y, -1, keepdims)) * y:
Mul, Sum, Sub and Mul, three passes over arrays of y's size and a reduction along rows,
which numpy pays per row where rows are short (4.7 ms on 32768 rows of 64 against the
library's 0.8). For y = log_softmax(x) it is g - sum(g, -1, keepdims) * exp(y): Exp, Sum,
Mul and Sub. The graph keeps TF's ops (graphs export and import as TF's); only the plan
changes.

The rule matches plan steps as dtf.runtime.fusion_norm does: each intermediate read by the
next op of the chain alone, neither fetched nor fed nor the target of a control edge; y
the output of a Softmax (LogSoftmax) step; the Sum keeping its dimensions; all on one
device with one float dtype. The fused step takes the last op's place and name. Where
the library does not serve the inputs (another dtype, a small tensor, another axis, the
library missing) the four kernels run one after the other as before.
"""
from __future__ import annotations

import numpy as np

from dtf.framework.graph_def import NodeDef
from dtf.runtime.fusion_norm import _failure, _readers, _same_float

_INPUTS = {"Mul": 2, "Sub": 2, "Sum": 2, "Exp": 1, "Softmax": 1, "LogSoftmax": 1}


def fuse_softmax_grads(steps, pinned):
    """``steps`` (build_plan's ``(compute, ins, out, nout, node)``) with each softmax or
    log-softmax gradient chain replaced by one step; ``pinned``: fed and fetched slots."""
    producer, readers = _readers(steps)
    control_targets = {c for step in steps for c in step[4].control_inputs}

    def op(i):
        """Step i's op where it has the op's own inputs (a variable's read before a kernel,
        a deref step, carries its consumer's node with one input: None)."""
        node, n_ins = steps[i][4], len(steps[i][1])
        return node.op if n_ins == _INPUTS.get(node.op, n_ins) else None

    def inner(i, j):
        """Step i's single output is read by step j alone and by nothing else."""
        out = steps[i][2]
        return (steps[i][3] == 1 and readers[out] == [j] and out not in pinned
                and steps[i][4].name not in control_targets and _same_float(steps[i][4], steps[j][4]))

    chains = {}  # last step -> (its chain's step indices, first to last; g, y, axes slots; log)
    for last, step in enumerate(steps):
        found = _softmax_chain(steps, producer, last, op, inner) if op(last) == "Mul" else \
            _log_softmax_chain(steps, producer, last, op, inner) if op(last) == "Sub" else None
        if found is not None:
            chains[last] = found
    if not chains:
        return steps
    dropped = {i for members, *_ in chains.values() for i in members[:-1]}
    return [_fused(steps, *chains[k]) if k in chains else step
            for k, step in enumerate(steps) if k not in dropped]


def _sum_of(steps, producer, slot, op):
    """(Sum step index, its input slot, its axes slot) if ``slot`` is a keep-dims Sum's."""
    i = producer.get(slot)
    if i is None or op(i) != "Sum" or not steps[i][4].attrs.get("keep_dims"):
        return None
    return i, steps[i][1][0], steps[i][1][1]


def _softmax_chain(steps, producer, last, op, inner):
    """(g - Sum(g * y)) * y, ending at the Mul ``last``."""
    for sub_pos in (0, 1):
        sub_slot, y = steps[last][1][sub_pos], steps[last][1][1 - sub_pos]
        sub = producer.get(sub_slot)
        yp = producer.get(y)
        if sub is None or yp is None or op(sub) != "Sub" or op(yp) != "Softmax" \
                or steps[yp][2] != y or not inner(sub, last):
            continue
        g, sum_slot = steps[sub][1]
        found = _sum_of(steps, producer, sum_slot, op)
        if found is None or not inner(found[0], sub):
            continue
        total, mul_slot, axes = found
        mul = producer.get(mul_slot)
        if mul is None or op(mul) != "Mul" or y not in steps[mul][1] or g == y:
            continue
        a, b = steps[mul][1]
        mul_g = b if a == y else a  # the Mul's other input: g, or its own read of g's variable
        if not _same_value(steps, producer, mul_g, g) or not inner(mul, total) \
                or not _same_float(steps[yp][4], steps[last][4]):
            continue
        return (mul, total, sub, last), g, y, axes, False
    return None


def _same_value(steps, producer, a, b) -> bool:
    """Slots ``a`` and ``b`` hold one value: they are one slot, or reads of one variable
    (a consumer that fusion may merge reads it in a deref step of its own, another in its
    kernel from the variable's slot itself), as a gradient fed from a variable is."""
    return a == b or _read_from(steps, producer, a) == _read_from(steps, producer, b)


def _read_from(steps, producer, slot):
    """The variable slot that ``slot``'s deref step reads, else ``slot``."""
    i = producer.get(slot)
    return steps[i][1][0] if i is not None and _is_deref(steps[i]) else slot


def _is_deref(step) -> bool:
    return getattr(step[0], "__name__", "") == "_deref" and len(step[1]) == 1


def _log_softmax_chain(steps, producer, last, op, inner):
    """g - Sum(g) * Exp(y), ending at the Sub ``last``."""
    g, mul_slot = steps[last][1]
    mul = producer.get(mul_slot)
    if mul is None or op(mul) != "Mul" or not inner(mul, last):
        return None
    for sum_pos in (0, 1):
        found = _sum_of(steps, producer, steps[mul][1][sum_pos], op)
        exp = producer.get(steps[mul][1][1 - sum_pos])
        if (found is None or not _same_value(steps, producer, found[1], g) or exp is None
                or op(exp) != "Exp"):
            continue
        total, _, axes = found
        (y,) = steps[exp][1]
        yp = producer.get(y)
        if (yp is None or op(yp) != "LogSoftmax" or steps[yp][2] != y or y == g
                or not inner(total, mul) or not inner(exp, mul)
                or not _same_float(steps[yp][4], steps[last][4])):
            continue
        return (exp, total, mul, last), g, y, axes, True
    return None


def _last_axis(axes, rank) -> bool:
    a = np.asarray(axes)
    return a.size == 1 and a.dtype.kind in "iu" and int(a.reshape(-1)[0]) in (-1, rank - 1)


def _fused(steps, members, g_slot, y_slot, axes_slot, log):
    chain = [steps[i] for i in members]
    last = chain[-1][4]
    from dtf.kernels.cpu import onednn_softmax

    # What the four ops read from outside the chain: g, y and the axes, and where g is a
    # variable's, the other ops' own reads of it (the fallback runs them as they are).
    produced = {step[2] for step in chain}
    outer = [g_slot, y_slot, axes_slot]
    for _, ins, _, _, _ in chain:
        outer += [s for s in ins if s not in produced and s not in outer]

    def compute(ctx, g, y, axes, *other_reads):
        if type(y) is np.ndarray and _last_axis(axes, y.ndim):
            dx = onednn_softmax.gradient(y, g, log)
            if dx is not None:
                return dx
        vals = dict(zip(outer, (g, y, axes) + other_reads))
        for step_compute, ins, out, _, node in chain:
            args = [vals[s] for s in ins]
            try:
                vals[out] = step_compute(ctx, *args)
            except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
                raise _failure(e, node, args, ctx) from e
        return vals[chain[-1][2]]

    controls, names = [], {}
    for _, ins, _, _, node in chain:
        controls += [c for c in node.control_inputs if c not in controls]
        names.update(zip(ins, node.inputs))
    kind = "LogSoftmax" if log else "Softmax"
    fused_node = NodeDef(last.name, f"Fused({kind} gradient: {','.join(s[4].op for s in chain)})",
                         [names.get(s, "?") for s in outer], controls,
                         last.device, last.attrs, list(last.output_dtypes))
    return compute, tuple(outer), chain[-1][2], 1, fused_node
