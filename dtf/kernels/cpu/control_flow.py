"""Kernels of the functional control-flow ops: a body runs inside its op's kernel (see
dtf.runtime.functional), so the executor stays a plain topological run."""
from __future__ import annotations

import time

import numpy as np

from dtf.framework import errors
from dtf.kernels.registry import register_kernel


def _functional():
    from dtf.runtime import functional  # imports the executor, which imports this registry

    return functional


@register_kernel("_Arg", "CPU")
def arg(node):
    def compute(ctx):
        raise errors.InternalError(node.name, None, f"body argument {node.name} was not fed")

    return compute


@register_kernel("_RefArg", "CPU")
def ref_arg(node):
    index = node.attrs["input_index"]
    key = _functional().FN_INPUTS
    return lambda ctx: ctx.extra[key][index]


@register_kernel("If", "CPU")
def if_kernel(node):
    fn = _functional()
    attrs = node.attrs
    record = attrs["record"]
    branches = [fn.Function(attrs[k], node, keep_record=record)
                for k in ("then_branch", "else_branch")]
    ref_mask = attrs["ref_mask"]
    history_input = attrs["history_input"]
    n_out = len(attrs["Tout"])
    History, resolve, body_context, as_bool = (fn.History, fn.resolve_inputs, fn.body_context,
                                               fn.as_bool)

    def compute(ctx, pred, *inputs):
        inputs = resolve(node, inputs, ref_mask, offset=1)
        taken = 0 if as_bool(node, pred) else 1
        body = branches[taken]
        forward = inputs[history_input].records[0] if history_input >= 0 else None
        outs, rec = body.call(body_context(ctx, inputs) if body.has_ref_args else ctx, inputs,
                              forward)
        history = History(taken, [rec], None)
        if not n_out:
            return history
        outs.append(history)
        return outs

    return compute


@register_kernel("While", "CPU")
def while_kernel(node):
    fn = _functional()
    attrs = node.attrs
    record = attrs["record"]
    n = attrs["n_vars"]
    cond = fn.Function(attrs["cond"], node)
    # Each iteration after the first check is one plan: the body, then the next cond.
    step = fn.Function(fn.body_then_cond(attrs["body"], attrs["cond"], n), node,
                       keep_record=record)
    ref_mask = attrs["ref_mask"]
    by_ref = cond.has_ref_args or step.has_ref_args
    History, resolve, body_context = fn.History, fn.resolve_inputs, fn.body_context

    def compute(ctx, *inputs):
        state = resolve(node, inputs, ref_mask)
        start = tuple(state)
        sub = body_context(ctx, state) if by_ref else ctx
        records = [] if record else None
        run_step = step.call
        (pred,), _ = cond.call(sub, state)
        count = 0
        while pred:
            outs, rec = run_step(sub, state)
            if record:
                records.append(rec)
            pred = outs.pop()
            state[:n] = outs
            count += 1
            if not count & 1023:  # a long loop still honours the step's deadline and abort
                _check_step(ctx, node, count)
        state[n:] = [History(None, records, start)]
        return state

    return compute


def _check_step(ctx, node, count):
    err = ctx.aborted()
    if err is not None:
        raise err
    if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
        raise errors.DeadlineExceededError(
            node.name, None, f"While '{node.name}': the step's deadline passed after {count} "
                             "iterations")


# A weight's gradient summed over a loop's iterations is, in an RNN cell, a thin product
# per iteration: a^T b with a = [x, h] (20 x 512 in the W9 LSTM) and b = the gates'
# gradient (20 x 1024). Such products run at a fraction of the GEMM rate (70-87 GFLOP/s
# against 250-300 here), and each is then added into the sum (a 2 MB pass). The loop
# keeps a and b instead and multiplies them stacked, once: sum_t a_t^T b_t = A^T B.
# Pending operands are multiplied out past PENDING_BYTES (memory stays bounded).
PENDING_BYTES = 64 << 20


class _ProductSum:
    """The running sum of one captured gradient that the body computes as MatMul(a, b,
    transpose_a=True): thin products are kept (``add``) and multiplied stacked
    (``total``); others are multiplied at once, as the body would have."""

    __slots__ = ("matmul", "a", "b", "pending", "sum")

    def __init__(self, matmul):
        self.matmul = matmul  # the body's MatMul kernel: the same checks and messages
        self.a, self.b, self.pending, self.sum = [], [], 0, None

    def add(self, ctx, a, b):
        if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 == b.ndim
                and a.shape[0] == b.shape[0] and a.dtype == b.dtype
                and a.nbytes + b.nbytes <= a.shape[1] * b.shape[1] * a.itemsize):
            self.a.append(a)
            self.b.append(b)
            self.pending += a.nbytes + b.nbytes
            if self.pending > PENDING_BYTES:
                self._flush(ctx)
        else:
            self._accumulate(self.matmul(ctx, a, b))

    def _flush(self, ctx):
        if self.a:
            a = self.a[0] if len(self.a) == 1 else np.concatenate(self.a)
            b = self.b[0] if len(self.b) == 1 else np.concatenate(self.b)
            self.a, self.b, self.pending = [], [], 0
            self._accumulate(self.matmul(ctx, a, b))

    def _accumulate(self, g):
        if self.sum is None:
            self.sum = np.array(g)
        else:
            np.add(self.sum, g, out=self.sum)

    def total(self, ctx):
        self._flush(ctx)
        return self.sum


def _thin_products(body, nf):
    """{output index: (a, b, MatMul node)} for the captured gradients (outputs from ``nf``
    on) that the body computes as MatMul(a, b, transpose_a=True) of float matrices."""
    from dtf.framework.graph_def import NodeDef

    nodes = {}
    for d in body["nodes"]:
        n = d if isinstance(d, NodeDef) else NodeDef.from_dict(d)
        nodes[n.name] = n
    found = {}
    for k, name in enumerate(body["outputs"]):
        op_name, _, index = name.rpartition(":")
        n = nodes.get(op_name)
        if (k < nf or n is None or n.op != "MatMul" or index != "0" or len(n.inputs) != 2
                or not n.attrs.get("transpose_a") or n.attrs.get("transpose_b")
                or getattr(n.attrs.get("T"), "name", None) not in ("float32", "float64")):
            continue
        found[k] = (n.inputs[0], n.inputs[1], n)
    return found


def _value_of(v):
    """A captured input as a value: a variable the body took by reference (its handle, or
    a Snapshot standing in for one) is read."""
    return v.read() if hasattr(v, "read") else v


@register_kernel("_WhileGrad", "CPU")
def while_grad_kernel(node):
    from dtf.kernels.registry import lookup

    fn = _functional()
    attrs = node.attrs
    nf = attrs["n_grads"]
    products = _thin_products(attrs["body"], nf)
    n_out = len(attrs["body"]["outputs"])
    # The body hands over a (in the product's place) and b (after its outputs).
    outputs = list(attrs["body"]["outputs"])
    for k, (a, b, _) in products.items():
        outputs[k] = a
        outputs.append(b)
    body = fn.Function(dict(attrs["body"], outputs=outputs), node)
    matmuls = [lookup("MatMul", "CPU", m.attrs["T"]).factory(m) for _, _, m in products.values()]
    kept = [k - nf for k in products]  # their places among the captured gradients
    cap_inputs = attrs["cap_inputs"]
    ref_mask = attrs["ref_mask"][1:]
    single = len(attrs["Tout"]) == 1
    resolve, body_context = fn.resolve_inputs, fn.body_context

    def compute(ctx, history, *inputs):
        state = resolve(node, inputs, ref_mask, offset=1)
        sub = body_context(ctx, state) if body.has_ref_args else ctx
        sums = None
        product_sums = [_ProductSum(m) for m in matmuls]
        for rec in reversed(history.records):
            outs, _ = body.call(sub, state, rec)
            state[:nf] = outs[:nf]
            grads = outs[nf:n_out]
            for j, (i, ps) in enumerate(zip(kept, product_sums)):
                ps.add(ctx, grads[i], outs[n_out + j])
                grads[i] = None
            if sums is None:  # copied once, then summed in place (a weight's gradient
                sums = [None if g is None else np.array(g) for g in grads]  # is one array)
            else:
                for a, b in zip(sums, grads):
                    if b is not None:
                        np.add(a, b, out=a)
        if sums is None:  # no iteration ran: nothing flowed to the captured tensors
            sums = [np.zeros_like(np.asarray(_value_of(history.inputs[k]))) for k in cap_inputs]
        else:
            for i, ps in zip(kept, product_sums):
                sums[i] = ps.total(ctx)
        out = state[:nf] + list(sums)
        return out[0] if single else out

    return compute
