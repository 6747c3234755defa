"""Running the bodies of functional control-flow ops (If, While and their gradients).

A body is plain data (``dtf.ops.control_flow_graphs.function_def``): its nodes, where each
argument comes from, its outputs and its extra targets. It compiles once per plan of the
op that holds it into an ordinary executor Plan, and runs on the device of that op, inside
the op's kernel: the executor and the partitioner see one node.

Arguments by value are fed to the plan. A variable captured by reference reaches the body
through the step context (``_RefArg`` reads ``ctx.extra[FN_INPUTS]``), so the body's reads
and updates act on the variable itself, each at its own turn.

With ``record`` on, a run also keeps the value of every tensor the body computed (the
outputs of every node it ran): the history a gradient body reads its forward values from.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from dtf.framework.graph_def import NodeDef
from dtf.framework.func_graph import BY_ALIAS, BY_REF
from dtf.runtime.graph_walk import needed_nodes
from dtf.runtime.resources import VariableResource

FN_INPUTS = "fn_inputs"


class Record:
    """What one run of a body computed: ``values[index_of[tensor name]]``."""

    __slots__ = ("index_of", "values")

    def __init__(self, index_of, values):
        self.index_of = index_of
        self.values = values

    def value(self, name):
        try:
            return self.values[self.index_of[name]]
        except KeyError:
            raise errors.InternalError(None, None, f"the forward body recorded no value for "
                                       f"{name}") from None


class History:
    """What a control-flow op hands its gradient: the branch it took (If), one Record per
    body run, and the op's inputs (their values)."""

    __slots__ = ("branch", "records", "inputs")

    def __init__(self, branch, records, inputs):
        self.branch = branch
        self.records = records
        self.inputs = inputs


class Function:
    """A compiled body. ``call(ctx, inputs, record)`` -> (outputs, Record or None), where
    ``inputs`` are the op-level inputs the body's arguments index into and ``record`` is
    the forward Record that gradient bodies read their forward values from."""

    def __init__(self, fdef: dict, owner: NodeDef, device_type="CPU", keep_record=False):
        from dtf.runtime.executor import build_plan  # the executor imports the kernels

        nodes = {}
        for d in fdef["nodes"]:
            n = d if isinstance(d, NodeDef) else NodeDef.from_dict(d)
            nodes[n.name] = n
        self.owner = owner
        lookup = nodes.__getitem__
        self.value_args = []     # (feed name, source, key)
        self.has_ref_args = False
        for name, source, key, is_ref in fdef["args"]:
            if is_ref:
                self.has_ref_args = True
            else:
                self.value_args.append((name, source, key))
        feeds = tuple(a[0] for a in self.value_args)
        outputs = tuple(fdef["outputs"])
        targets = tuple(fdef.get("targets", ()))
        fetches = outputs
        self.index_of = None
        if keep_record:
            order = needed_nodes(lookup, outputs, feeds, targets)
            names = list(dict.fromkeys(
                list(feeds) + [f"{n.name}:{k}" for n in order for k in range(len(n.output_dtypes))]))
            fetches = outputs + tuple(names)
            self.index_of = {name: len(outputs) + i for i, name in enumerate(names)}
        try:
            self.plan = build_plan(lookup, fetches, feeds, targets, device_type, owner.device)
        except errors.OpError as e:
            raise type(e)(owner.name, None, f"in the body of {owner.op} '{owner.name}': "
                          f"{e.message}") from None
        if self.plan.blocking:
            raise errors.UnimplementedError(
                owner.name, None, f"{owner.op} '{owner.name}': a body that waits on other steps "
                "(queue or accumulator ops) is not supported inside tf.cond/tf.while_loop")
        self.n_outputs = len(outputs)

    def call(self, ctx, inputs, record=None):
        feeds = []
        for _, source, key in self.value_args:
            feeds.append(inputs[key] if source == "input" else record.value(key))
        plan = self.plan
        vals = plan._slots(feeds)
        plan._run_sequential(ctx, vals)
        out = [vals[s].read() if r else vals[s]
               for s, r in zip(plan.fetch_slots, plan.fetch_is_ref)]
        if self.index_of is None:
            return out, None
        return out[:self.n_outputs], Record(self.index_of, out)


class Snapshot:
    """A value standing in for a variable handle (a ``v/read`` alias that came from
    another device): the body's reads dereference it like a handle."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def read(self):
        return self.value


def resolve_inputs(node, inputs, ref_mask, offset=0):
    """The op's inputs as its bodies take them (``ref_mask``: func_graph's BY_VALUE,
    BY_REF, BY_ALIAS): a tensor by value is read now, when the op starts; a variable the
    body may update must be the variable itself, so it must live on the op's own device;
    an alias is handed over as it came (a handle, or a copy from another device)."""
    out = list(inputs)
    for i, v in enumerate(out):
        kind = ref_mask[i]
        if kind == BY_REF:
            if not isinstance(v, (VariableResource, Snapshot)):  # (an alias one body down)
                raise errors.InvalidArgumentError(
                    node.name, None,
                    f"{node.op} '{node.name}' may update the variable feeding its input "
                    f"{node.inputs[i + offset]!r}, which lives on another device: dtf runs a "
                    "control-flow body on the device of its op, so keep the variables one body "
                    "assigns to on one device (the op is placed with the first of them)")
        elif kind == BY_ALIAS:
            if not isinstance(v, VariableResource):
                out[i] = Snapshot(v)
        elif isinstance(v, VariableResource):
            out[i] = v.read()
    return out


def body_context(ctx, inputs):
    """The step context a body with reference arguments runs in (one per op run)."""
    from dtf.runtime.executor import StepContext

    sub = StepContext(ctx.state, ctx.step_id, ctx.rendezvous, ctx.deadline, ctx.device, ctx.task)
    sub.extra = {FN_INPUTS: inputs}
    return sub


def as_bool(node, pred) -> bool:
    arr = np.asarray(pred)
    if arr.size != 1:
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op} '{node.name}': the predicate must be a scalar, got "
            f"shape {list(arr.shape)}")
    return bool(arr.reshape(()))
