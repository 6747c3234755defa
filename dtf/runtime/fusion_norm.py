"""Plan rewrite: a ReluGrad whose only reader is a fused batch norm gradient runs inside it.

In relu(batch_norm(conv(x))), the commonest block of a convolutional network, the backward
pass computes dy = ReluGrad(g, relu_out) (one pass, a fresh 4 MB array per 64x32x32x16
tensor, on one core) only for FusedBatchNormGrad* to read it twice. Here the pair becomes
one step at the gradient's position: the gradient's two chunked passes read g and relu_out
and apply the mask themselves (dtf.kernels.cpu.norm.backward). The ResNet-style step
(bench M3) has four such pairs per step.

The rule matches plan steps as dtf.runtime.fusion does: the ReluGrad's output must be read
by exactly one step, as that step's first input, and be neither fetched, fed nor the target
of a control edge; both ops on the same device with the same float dtype. The fused step
carries the gradient op's name and outputs; inputs the kernel cannot take (channels first,
half precision, shapes that differ) and the time before Numba's loops load run the two
original kernels one after the other.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from dtf.framework.graph_def import NodeDef
from dtf.kernels.cpu import jit_loading

GRADS = ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3")
_DTYPES = ("float32", "float64")


def fuse_relu_grads(steps, pinned):
    """``steps`` (build_plan's ``(compute, ins, out, nout, node)``) with each matching
    ReluGrad + FusedBatchNormGrad* pair replaced by one step; ``pinned``: fed and fetched
    slots."""
    producer = {}
    readers = defaultdict(list)
    for i, step in enumerate(steps):
        producer[step[2]] = i
        for s in step[1]:
            readers[s].append(i)
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
                and relu.name not in control_targets and relu.device == node.device
                and getattr(relu.dtype_key, "name", None) in _DTYPES
                and relu.dtype_key == node.dtype_key):
            pairs[j] = i
    if not pairs:
        return steps
    dropped = set(pairs.values())
    return [_fused(steps[pairs[k]], step) if k in pairs else step
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
            # Variables among the gradient's inputs (scale) arrive as handles: read them
            # now, as the gradient's own kernel would.
            vals = [v if type(v) is np.ndarray or not hasattr(v, "read") else v.read() for v in rest]
            try:
                result = fast(g, f, *vals[:4])
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
