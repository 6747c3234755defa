"""Kernels of the functional control-flow ops: a body runs inside its op's kernel (see
dtf.runtime.functional), so the executor stays a plain topological run."""
from __future__ import annotations

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


@register_kernel("_CheckPredicates", "CPU")
def check_predicates(node):
    rule = node.attrs["rule"]

    def compute(ctx, *preds):
        values = [bool(np.asarray(p)) for p in preds]
        if rule == "at_most_one" and sum(values) > 1:
            raise errors.InvalidArgumentError(
                node.name, None, f"Input error: exclusive=True: more than 1 conditions "
                f"({', '.join(node.inputs)}) evaluated as True: {values}")
        if rule == "last_is_true" and not values[0]:
            raise errors.InvalidArgumentError(
                node.name, None, f"Input error: None of conditions evaluated as True: {values[1:]}")

    return compute
