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
from dtf.framework.graph_walk import needed_nodes
from dtf.state.resources import VariableResource

FN_INPUTS = "fn_inputs"


class Record:
    """What one run of a body computed: its value slots, and where each tensor's value is
    (``index_of``: name -> (slot, whether the slot holds a variable handle))."""

    __slots__ = ("index_of", "values")

    def __init__(self, index_of, values):
        self.index_of = index_of
        self.values = values

    def value(self, name):
        try:
            slot, is_ref = self.index_of[name]
        except KeyError:
            raise errors.InternalError(None, None, f"the forward body recorded no value for "
                                       f"{name}") from None
        v = self.values[slot]
        return v.read() if is_ref else v


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
    the forward Record that gradient bodies read their forward values from.

    A call costs one plan run plus a few list operations: a loop runs it every iteration
    (constants are placed in the value slots once, not run each time)."""

    def __init__(self, fdef: dict, owner: NodeDef, device_type="CPU", keep_record=False):
        from dtf.runtime.executor import build_plan  # the executor imports the kernels

        nodes = {}
        for d in fdef["nodes"]:
            n = d if isinstance(d, NodeDef) else NodeDef.from_dict(d)
            nodes[n.name] = n
        lookup = nodes.__getitem__
        value_args = []     # (feed name, source, key)
        self.has_ref_args = False
        for name, source, key, is_ref in fdef["args"]:
            if is_ref:
                self.has_ref_args = True
            else:
                value_args.append((name, source, key))
        outputs = tuple(fdef["outputs"])
        targets = tuple(fdef.get("targets", ()))
        # Constants are fed: a body that runs a thousand times reads them from its slots.
        consts = [n for n in nodes.values()
                  if n.op == "Const" and not n.inputs and not n.control_inputs]
        feeds = tuple(a[0] for a in value_args) + tuple(f"{n.name}:0" for n in consts)
        fetches = outputs
        names = []
        if keep_record:
            order = needed_nodes(lookup, outputs, feeds, targets)
            names = list(dict.fromkeys(
                list(feeds) + [f"{n.name}:{k}" for n in order for k in range(len(n.output_dtypes))]))
            fetches = outputs + tuple(names)  # fetched slots stay written (never fused away)
        try:
            plan = build_plan(lookup, fetches, feeds, targets, device_type, owner.device)
        except errors.OpError as e:
            raise type(e)(owner.name, None, f"in the body of {owner.op} '{owner.name}': "
                          f"{e.message}") from None
        if plan.blocking:
            raise errors.UnimplementedError(
                owner.name, None, f"{owner.op} '{owner.name}': a body that waits on other steps "
                "(queue or accumulator ops) is not supported inside tf.cond/tf.while_loop")
        self.plan = plan
        n_args = len(value_args)
        self._template = plan.initial.copy()
        for slot, n in zip(plan.feed_slots[n_args:], consts):
            value = n.attrs["value"]
            # A scalar as a numpy scalar, like the 0-d results a loop carries: scalar
            # arithmetic between the two stays on numpy's fast scalar path.
            numeric_scalar = getattr(value, "ndim", 1) == 0 and value.dtype.kind in "biuf"
            self._template[slot] = value[()] if numeric_scalar else value
        self._from_inputs = [(slot, key) for slot, (_, source, key)
                             in zip(plan.feed_slots, value_args) if source == "input"]
        self._from_record = [(slot, key) for slot, (_, source, key)
                             in zip(plan.feed_slots, value_args) if source != "input"]
        n_out = len(outputs)
        self._out_slots = plan.fetch_slots[:n_out]
        self._out_refs = plan.fetch_is_ref[:n_out]
        self._any_ref_out = any(self._out_refs)
        self.index_of = None
        if keep_record:
            self.index_of = {name: (slot, is_ref) for name, slot, is_ref in
                             zip(names, plan.fetch_slots[n_out:], plan.fetch_is_ref[n_out:])}

    def call(self, ctx, inputs, record=None):
        vals = self._template.copy()
        for slot, key in self._from_inputs:
            vals[slot] = inputs[key]
        for slot, name in self._from_record:
            vals[slot] = record.value(name)
        self.plan._run_sequential(ctx, vals)
        if self._any_ref_out:
            out = [vals[s].read() if r else vals[s] for s, r in zip(self._out_slots, self._out_refs)]
        else:
            out = [vals[s] for s in self._out_slots]
        if self.index_of is None:
            return out, None
        return out, Record(self.index_of, vals)


def body_then_cond(body: dict, cond: dict, n_vars: int) -> dict:
    """One body that runs a loop's body and then its cond on the new loop variables:
    outputs = the body's outputs + [the next predicate]. A loop then runs one plan per
    iteration instead of two (node names are unique across bodies, so they merge). The
    plan orders nodes by a depth-first walk from its outputs in order: everything the body's
    outputs need (their control dependencies too) runs before any node of the cond, so a
    cond that reads a variable the body updates sees the update, as with two plans."""
    loop_args = {name: i for i, (name, source, key, _) in enumerate(cond["args"])
                 if source == "input" and key < n_vars}
    new_value = {name: body["outputs"][loop_args[name]] for name in loop_args}
    arg_nodes = {name.rsplit(":", 1)[0]: name for name in loop_args}
    nodes = list(body["nodes"])
    for d in cond["nodes"]:
        if d["name"] in arg_nodes:
            continue
        inputs = []
        for i in d["input"]:
            if i.startswith("^") and i[1:] in arg_nodes:
                continue  # the new loop variable exists before the cond runs
            inputs.append(new_value.get(i, i))
        nodes.append(dict(d, input=inputs))
    args = list(body["args"]) + [a for a in cond["args"] if a[0] not in loop_args]
    seen, unique = set(), []
    for a in args:
        if a[0] not in seen:
            seen.add(a[0])
            unique.append(a)
    return {"nodes": nodes, "args": unique, "outputs": list(body["outputs"]) + cond["outputs"],
            "targets": list(body.get("targets", ())) + list(cond.get("targets", ()))}


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
    if isinstance(pred, VariableResource):  # a bool variable's alias comes as its handle
        pred = pred.read()
    arr = np.asarray(pred)
    if arr.size != 1:
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op} '{node.name}': the predicate must be a scalar, got "
            f"shape {list(arr.shape)}")
    return bool(arr.reshape(()))
