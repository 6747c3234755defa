"""Building control-flow bodies: nested structures (TF's ``nest``), body graphs and their
plain-data form (the ``function`` attrs of If and While), shared by cond, while_loop and
their gradients."""
from __future__ import annotations

import weakref

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.func_graph import BY_REF, HISTORY, FuncGraph, ref_kind
from dtf.framework.graph_def import node_def_of
from dtf.framework.nest import Nest
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import as_shape

# Forward op -> the Python objects its gradient is built from (body graphs and structure).
# Graphs imported from plain data carry no such entry: their control flow has no gradient.
_BUILT: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def remember(op, info):
    _BUILT[op] = info


SECOND_ORDER = "second order"  # what a gradient op is remembered as: it has no gradient


def built_info(op):
    info = _BUILT.get(op)
    if info is SECOND_ORDER:
        raise LookupError(f"No gradient for {op.type} '{op.name}': second-order gradients "
                          "through tf.cond are not supported")
    if info is None:
        raise LookupError(f"No gradient for {op.type} '{op.name}': its bodies were not built in "
                          "this process (a graph imported from plain data)")
    return info


# -- nested structures (TF's nest: lists nest too) -----------------------------------------
_NEST = Nest((list, tuple, dict))
is_sequence = _NEST.is_sequence
flatten = _NEST.flatten
pack_sequence_as = _NEST.pack_sequence_as


def assert_same_structure(a, b, what):
    if not _NEST.same_structure(a, b):
        raise ValueError(f"{what} don't have the same nested structure.\n\nFirst structure: {a!r}"
                         f"\n\nSecond structure: {b!r}")


# -- bodies ----------------------------------------------------------------------------------
def new_body(name: str, forward=None) -> FuncGraph:
    outer = _ops.get_default_graph()
    return FuncGraph(name, outer, forward)


def function_def(fg: FuncGraph, outputs, targets=(), input_index=None, arg_keys=None) -> dict:
    """The plain-data body: nodes, arguments (name, source, key, by reference), outputs and
    targets. ``input_index``: outer tensor -> index in the op inputs the body reads;
    ``arg_keys``: the index of each explicit argument there."""
    arg_keys = list(arg_keys or [])
    args, ref_index = [], {}
    for t, key in zip(fg.args, arg_keys):
        args.append([t.name, "input", key, False])
    for kind, source, ph in fg.captures:
        if kind == HISTORY:
            args.append([ph.name, "history", source.name, False])
            continue
        key = input_index[source]
        is_ref = ph.op.type == "_RefArg"
        args.append([ph.name, "input", key, is_ref])
        if is_ref:
            ref_index[ph.op.name] = key
    nodes = []
    for op in fg.get_operations():
        d = node_def_of(op).to_dict()
        if op.name in ref_index:
            d = dict(d, attr=dict(d["attr"], input_index=ref_index[op.name]))
        nodes.append(d)
    return {"nodes": nodes, "args": args, "outputs": [t.name for t in outputs],
            "targets": [op.name for op in targets]}


def outer_captures(*graphs):
    """The outer tensors the bodies capture, each once, in order of first capture."""
    seen = {}
    for fg in graphs:
        for kind, source, _ in fg.captures:
            if kind != HISTORY and source not in seen:
                seen[source] = len(seen)
    return list(seen)


def outer_controls(*graphs):
    seen = []
    for fg in graphs:
        for op in fg.outer_control_inputs:
            if op not in seen:
                seen.append(op)
    return seen


def colocate_with_variables(op, inputs):
    """A body that may update a variable runs where the variable lives (as an Assign
    does): the op is colocated with the first such variable."""
    for t in inputs:
        if ref_kind(t) == BY_REF:
            root = _ops._colocation_root(t.op)
            op._attrs["_class"] = [f"loc:@{root.name}"]
            if root.device or not op._device:
                op._device = root.device
            return


def ref_mask(inputs):
    return [ref_kind(t) for t in inputs]


def shape_list(shape):
    shape = as_shape(shape)
    return None if shape.ndims is None else shape.as_list()


# -- the argument placeholders ----------------------------------------------------------------
def _arg_infer(inputs, attrs):
    return [(attrs["dtype"], attrs.get("shape"))]


register_op("_Arg")(_arg_infer)
register_op("_RefArg", stateful=True, ref_output=True)(_arg_infer)
NotDifferentiable("_Arg")
NotDifferentiable("_RefArg")


def _every_input_by_handle(op_type):
    """Control-flow ops take each input that comes from a variable as its handle (the
    executor then skips its read): the kernel reads the ones a body takes by value when it
    starts and hands the others to the body (see dtf.runtime.functional)."""
    from dtf.framework.op_registry import get_op_def

    object.__setattr__(get_op_def(op_type), "ref_inputs", _EveryPosition())


class _EveryPosition(tuple):
    """An empty tuple that contains every position (iterating it colocates with nothing)."""

    def __contains__(self, pos):
        return True


def register_control_flow_op(op_type, infer):
    register_op(op_type, stateful=True)(infer)
    _every_input_by_handle(op_type)


def outputs_infer(inputs, attrs):
    """Outputs from the attrs ``Tout``/``output_shapes``, then the record of the run."""
    out = [(dt, sh) for dt, sh in zip(attrs["Tout"], attrs["output_shapes"])]
    return out + [(_dtypes.control_flow_record, [])]
