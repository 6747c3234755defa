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


@register_kernel("_WhileGrad", "CPU")
def while_grad_kernel(node):
    fn = _functional()
    attrs = node.attrs
    body = fn.Function(attrs["body"], node)
    nf = attrs["n_grads"]
    cap_inputs = attrs["cap_inputs"]
    ref_mask = attrs["ref_mask"][1:]
    single = len(attrs["Tout"]) == 1
    resolve, body_context = fn.resolve_inputs, fn.body_context

    def compute(ctx, history, *inputs):
        state = resolve(node, inputs, ref_mask, offset=1)
        sub = body_context(ctx, state) if body.has_ref_args else ctx
        sums = None
        for rec in reversed(history.records):
            outs, _ = body.call(sub, state, rec)
            state[:nf] = outs[:nf]
            if sums is None:  # copied once, then summed in place (a weight's gradient
                sums = [np.array(g) for g in outs[nf:]]  # is one array, not one per step)
            else:
                for a, b in zip(sums, outs[nf:]):
                    np.add(a, b, out=a)
        if sums is None:  # no iteration ran: nothing flowed to the captured tensors
            sums = [np.zeros_like(np.asarray(history.inputs[k])) for k in cap_inputs]
        out = state[:nf] + list(sums)
        return out[0] if single else out

    return compute
