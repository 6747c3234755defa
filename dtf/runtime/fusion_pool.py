"""Plan rewrite: a ReluGrad whose gradient is a MaxPoolGrad's output and whose features are
that pooling's input, computed by the pooling gradient itself.

In max_pool(relu(conv(x))) (the deep-MNIST CNN's layers) the backward pass wrote dx =
MaxPoolGrad(relu_out, pooled, g), three quarters zeros, then ReluGrad(dx, relu_out), one
more pass over two arrays of the ReLU's size (conv1's: 1.6M floats, 0.7 ms of a 29 ms
step). A window's gradient goes to one tap only, where the input equals the window's
maximum, so the ReLU mask there is (maximum > 0) and the pooling's loop applies it as it
writes (dtf.kernels.cpu.conv_fast.max_pool_grad_relu). Where that loop does not serve (the
windows do not tile the image, the numpy stand-ins before the loops load), the two kernels
run one after the other as before.

The rule matches plan steps as dtf.runtime.fusion_norm does: the pooling gradient's output
read by the ReluGrad alone, neither fetched nor fed nor the target of a control edge, and
the ReluGrad's features the very slot the pooling gradient takes as its input; both on
one device with one float dtype. The fused step takes the ReluGrad's place and name.
"""
from __future__ import annotations

from dtf.framework.graph_def import NodeDef
from dtf.kernels.cpu import jit_loading
from dtf.runtime.fusion_norm import _failure, _readers, _same_float, replace_pairs


def fuse_pool_relu_grads(steps, pinned):
    """``steps`` (build_plan's ``(compute, ins, out, nout, node)``) with each matching
    MaxPoolGrad + ReluGrad pair replaced by one step; ``pinned``: fed and fetched slots."""
    producer, readers = _readers(steps)
    control_targets = {c for step in steps for c in step[4].control_inputs}
    pairs = {}  # ReluGrad step index -> MaxPoolGrad step index
    for j, step in enumerate(steps):
        relu = step[4]
        if relu.op != "ReluGrad" or len(step[1]) != 2:
            continue
        g, f = step[1]
        i = producer.get(g)
        if i is None:
            continue
        pool_ins, pool = steps[i][1], steps[i][4]
        if (pool.op == "MaxPoolGrad" and steps[i][3] == 1 and len(pool_ins) == 3
                and pool_ins[0] == f and g != f and readers[g] == [j] and g not in pinned
                and pool.name not in control_targets and _same_float(pool, relu)):
            pairs[j] = i
    return replace_pairs(steps, pairs, _fused)


def _naming(node, ins, ctx, fn, *args):
    """``fn(*args)``, its error re-raised naming ``node`` and its inputs ``ins``."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - re-raised naming the op that failed
        raise _failure(e, node, ins, ctx) from e


def _fused(pool_step, relu_step):
    pool_compute, pool_ins, _, _, pool = pool_step
    relu_compute, _, out, nout, relu = relu_step
    from dtf.kernels.cpu.conv_fast import max_pool_grad_relu

    def compute(ctx, x, y, dy):
        ins = [x, y, dy]
        if jit_loading.loaded():
            result = _naming(pool, ins, ctx, max_pool_grad_relu, pool, *ins)
            if result is not None:
                return result
        dx = _naming(pool, ins, ctx, pool_compute, ctx, *ins)
        return _naming(relu, [dx, x], ctx, relu_compute, ctx, dx, x)

    controls = list(pool.control_inputs) + [c for c in relu.control_inputs
                                            if c not in pool.control_inputs]
    fused_node = NodeDef(relu.name, "Fused(MaxPoolGrad,ReluGrad)", list(pool.inputs), controls,
                         relu.device, relu.attrs, list(relu.output_dtypes))
    return compute, tuple(pool_ins), out, nout, fused_node
