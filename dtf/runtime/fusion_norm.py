"""Plan rewrites around fused batch norm: a Relu that alone reads a batch norm's output, and
a ReluGrad that alone feeds a batch norm gradient, run inside the batch norm kernels.

In relu(batch_norm(conv(x))), the commonest block of a convolutional network, the forward
pass wrote y and then relu(y) (two fresh 4 MB arrays per 64x32x32x16 tensor), and the
backward pass computed dy = ReluGrad(g, relu_out) (one pass, a fresh array, on one core)
only for FusedBatchNormGrad* to read it twice. Here the batch norm writes relu(y) itself
(the Relu's step then passes that array on) and the gradient's two chunked passes read g
and relu_out and apply the mask themselves (dtf.kernels.cpu.norm). The ResNet-style step
(bench M3) has four such blocks.

The rules match plan steps as dtf.runtime.fusion does: the intermediate (y, or the
ReluGrad's output) must be read by exactly one step, as its first input, and be neither
fetched nor fed (nor, for the ReluGrad, the target of a control edge); both ops on the
same device with the same float dtype. Inputs the kernels cannot take (channels first,
half precision, shapes that differ) and the time before Numba's loops load run the
original kernels one after the other.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from dtf.framework.graph_def import NodeDef
from dtf.kernels.cpu import jit_loading

FORWARDS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
ADDS = ("Add", "AddV2")
GRADS = ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3")
_DTYPES = ("float32", "float64")


def _readers(steps):
    producer, readers = {}, defaultdict(list)
    for i, step in enumerate(steps):
        if step[3]:
            producer[step[2]] = i
        for s in step[1]:
            readers[s].append(i)
    return producer, readers


def _same_float(a, b):
    return (a.device == b.device and getattr(a.dtype_key, "name", None) in _DTYPES
            and a.dtype_key == b.dtype_key)


class Applied(np.ndarray):
    """A batch norm's y that already holds relu(y) (or relu(y + other)): the Add and Relu
    steps after it pass it on instead of computing. A marker type rather than a flag, so
    plans run by several steps at once need no shared state; the fallback's plain y runs
    the Add and the Relu as usual."""


# Ops that read only their input's shape, which the rewritten y keeps.
SHAPE_READERS = ("Shape", "Size", "Rank")


def fuse_relu_tails(steps, pinned):
    """``steps`` with each Relu that alone reads a FusedBatchNorm*'s y, or an Add of y and
    another tensor that only the Relu reads, applied by the batch norm's kernel (readers
    of the shape alone aside: the gradient of Add takes the shapes of both operands)."""
    producer, readers = _readers(steps)
    out = None

    def only_reader(slot, j):
        return slot not in pinned and all(
            k == j or steps[k][4].op in SHAPE_READERS for k in readers[slot]) and j in readers[slot]

    for j, step in enumerate(steps):
        relu = step[4]
        if relu.op != "Relu" or len(step[1]) != 1 or not only_reader(step[1][0], j):
            continue
        i = producer.get(step[1][0])
        if i is None:
            continue
        add = None
        if steps[i][4].op in ADDS and len(steps[i][1]) == 2 and _same_float(steps[i][4], relu):
            add, a_ins = i, steps[i][1]
            for pos in (0, 1):
                i = producer.get(a_ins[pos])
                # The other operand becomes the batch norm's input: it must exist by then.
                if (i is not None and steps[i][4].op in FORWARDS and steps[i][2] == a_ins[pos]
                        and a_ins[1 - pos] != a_ins[pos] and only_reader(a_ins[pos], add)
                        and producer.get(a_ins[1 - pos], -1) < i):
                    break
            else:
                continue
        bn = steps[i][4]
        if (bn.op in FORWARDS and (add is not None or steps[i][2] == step[1][0])
                and steps[i][3] == len(bn.output_dtypes) and _same_float(relu, bn)):
            out = out or list(steps)
            if add is None:
                out[i] = _with_relu(steps[i])
            else:
                out[i] = _with_relu(steps[i], steps[add][1][1 - pos])
                out[add] = _passing_on(steps[add], bn)
            out[j] = _passing_on(step, bn)
    return out or steps


def _passing_on(step, bn):
    """The Add or Relu step after a rewritten batch norm: passes an Applied y on (the Relu
    as a plain array), computes as before otherwise. Renamed, so that no elementwise group
    takes it for the op it was."""
    compute0, ins, out, nout, node = step
    last = node.op == "Relu"

    def compute(ctx, *xs):
        for x in xs:
            if type(x) is Applied:
                return x.view(np.ndarray) if last else x
        return compute0(ctx, *xs)

    renamed = NodeDef(node.name, f"{node.op}(in {bn.op})", node.inputs, node.control_inputs,
                      node.device, node.attrs, list(node.output_dtypes))
    return compute, ins, out, nout, renamed


def _handles_read(values):
    """Variables among a kernel's inputs (scale) arrive as handles: read them now, as the
    op's own kernel would."""
    return [v if type(v) is np.ndarray or not hasattr(v, "read") else v.read() for v in values]


def _with_relu(step, residual_slot=None):
    """The batch norm ``step`` writing relu(y), or relu(y + the value of ``residual_slot``,
    appended to its inputs), as an Applied array; until the loops load, or where the
    kernel cannot take the inputs, its own kernel (the steps after it then compute)."""
    compute0, ins, out, nout, node = step
    n_bn = len(ins)
    if residual_slot is not None:
        ins = tuple(ins) + (residual_slot,)
    from dtf.kernels.cpu.norm import forward

    fast = None

    def compute(ctx, *xs):
        nonlocal fast
        if jit_loading.loaded():
            if fast is None:
                fast = forward(node, relu=True)
            vals = _handles_read(xs[:n_bn])
            result = fast(*vals, xs[n_bn] if residual_slot is not None else None)
            if result is not None:
                return (result[0].view(Applied),) + tuple(result[1:])
        return compute0(ctx, *xs[:n_bn])

    return compute, ins, out, nout, node


def fuse_relu_grads(steps, pinned):
    """``steps`` (build_plan's ``(compute, ins, out, nout, node)``) with each matching
    ReluGrad + FusedBatchNormGrad* pair replaced by one step; ``pinned``: fed and fetched
    slots."""
    producer, readers = _readers(steps)
    control_targets = {c for step in steps for c in step[4].control_inputs}
    pairs = {}  # grad step index -> relu grad step index
    for j, step in enumerate(steps):
        node = step[4]
        if node.op not in GRADS or not step[1]:
            continue
        i = producer.get(step[1][0])
        if i is None or i in pairs.values():
            continue
        relu = steps[i][4]
        out = steps[i][2]
        if (relu.op == "ReluGrad" and steps[i][3] == 1 and readers[out] == [j]
                and step[1].count(out) == 1 and out not in pinned
                and relu.name not in control_targets and _same_float(relu, node)):
            pairs[j] = i
    return replace_pairs(steps, pairs, _fused)


def replace_pairs(steps, pairs, fuse):
    """``steps`` with each step k of ``pairs`` ({k: its producer's index}) replaced by
    ``fuse(producer step, step k)`` and the producer dropped."""
    if not pairs:
        return steps
    dropped = set(pairs.values())
    return [fuse(steps[pairs[k]], step) if k in pairs else step
            for k, step in enumerate(steps) if k not in dropped]


def _fused(relu_step, grad_step):
    relu_compute, relu_ins, _, _, relu = relu_step
    grad_compute, grad_ins, out, nout, node = grad_step
    from dtf.kernels.cpu.norm import backward

    fast = None

    def compute(ctx, g, f, *rest):
        nonlocal fast
        if jit_loading.loaded():
            if fast is None:
                fast = backward(node)
            vals = _handles_read(rest)
            try:
                result = fast(g, f, *vals[:5])  # reserve_space_3 too, where V3 has one
            except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
                raise _failure(e, node, [g, f] + vals, ctx) from e
            if result is not None:
                return result
        try:
            dy = relu_compute(ctx, g, f)
        except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
            raise _failure(e, relu, [g, f], ctx) from e
        try:
            return grad_compute(ctx, dy, *rest)
        except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
            raise _failure(e, node, [dy] + list(rest), ctx) from e

    names = list(relu.inputs[:2]) + list(node.inputs[1:])
    controls = list(relu.control_inputs) + [c for c in node.control_inputs
                                            if c not in relu.control_inputs]
    fused_node = NodeDef(node.name, f"Fused(ReluGrad,{node.op})", names, controls, node.device,
                         node.attrs, list(node.output_dtypes))
    return compute, tuple(relu_ins) + tuple(grad_ins[1:]), out, nout, fused_node


def _failure(e, node, ins, ctx):
    from dtf.runtime.executor import _op_failure  # the executor imports this module

    return _op_failure(e, node, ins, ctx)
