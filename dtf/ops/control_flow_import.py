"""TF's functional If/While nodes (and StatelessIf/StatelessWhile) as dtf's If/While: the
FunctionDefs their ``func`` attrs name become the plain-data bodies dtf's ops keep.

An imported If or While has no gradient function of its own (its bodies were not built
by tf.cond/tf.while_loop in this process); a graph exported with its gradient holds that
gradient as ops already (see dtf/ops/control_flow_export.py), which import like any other.
"""
from __future__ import annotations

from dtf.framework.function_import import import_function
from dtf.framework.graph_io import FuncRef
from dtf.framework.tensor_shape import TensorShape

from . import control_flow_graphs as cfg


def _function(attrs, key, library, graph, node, arg_shapes):
    ref = attrs.get(key)
    if not isinstance(ref, FuncRef):
        raise ValueError(f"attr {key!r} must name a function, got {ref!r}")
    if ref.attrs:
        raise ValueError(f"attr {key!r}: function {ref.name!r} is instantiated with attrs "
                         f"{sorted(ref.attrs)}, which dtf does not support")
    if library is None:
        raise ValueError(f"attr {key!r} names function {ref.name!r} but the GraphDef has no "
                         "function library")
    prefix = graph.get_name_scope()
    name = f"{prefix}/{node.name}" if prefix else node.name
    return import_function(library.get(ref.name), library, graph, f"{name}/{key}", arg_shapes)


def _check_types(node, what, tensors, types):
    got = [t.dtype for t in tensors]
    if types is not None and list(types) != got:
        raise TypeError(f"{what}: the types {[t.name for t in types]} do not match "
                        f"{[t.name for t in got]}")


def _output_shapes(attrs, outputs_per_body, n):
    shapes = attrs.get("output_shapes") or []
    if len(shapes) == n:
        return [None if s is None else list(s) for s in shapes]
    out = []
    for k in range(n):
        merged = None
        for outs in outputs_per_body:
            s = outs[k].shape
            merged = s if merged is None else _most_specific(merged, s)
        out.append(cfg.shape_list(merged))
    return out


def _most_specific(a, b):
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _body(fg, outputs, targets, n_args):
    return cfg.function_def(fg, outputs, targets, {}, list(range(n_args)))


def if_attrs(graph, node, inputs, attrs, library):
    """dtf If attrs of a TF If node: inputs are [cond] + the branches' arguments."""
    args = inputs[1:]
    _check_types(node, "If Tin", args, attrs.get("Tin"))
    shapes = [t.shape.as_list() if t.shape.ndims is not None else None for t in args]
    branches = [_function(attrs, k, library, graph, node, shapes)
                for k in ("then_branch", "else_branch")]
    tout = list(attrs.get("Tout") or [])
    for (fg, outs, _), key in zip(branches, ("then_branch", "else_branch")):
        _check_types(node, f"If {key} outputs versus Tout", outs, tout)
    return {"then_branch": _body(*branches[0], len(args)), "else_branch": _body(*branches[1], len(args)),
            "Tout": tout, "output_shapes": _output_shapes(attrs, [b[1] for b in branches], len(tout)),
            "ref_mask": [0] * len(args), "history_input": -1, "record": False}


def while_attrs(graph, node, inputs, attrs, library):
    """dtf While attrs of a TF While node: every input is a loop variable."""
    _check_types(node, "While T", inputs, attrs.get("T"))
    n = len(inputs)
    shapes = attrs.get("output_shapes") or []
    shapes = shapes if len(shapes) == n else [None] * n
    # The loop variables' shapes may change between iterations: the bodies see the
    # declared invariants (TF's output_shapes), not the first iteration's shapes.
    arg_shapes = [None if s is None else list(s) for s in shapes]
    cond = _function(attrs, "cond", library, graph, node, arg_shapes)
    body = _function(attrs, "body", library, graph, node, arg_shapes)
    _check_types(node, "While body outputs versus T", body[1], [t.dtype for t in inputs])
    return {"cond": _body(*cond, n), "body": _body(*body, n), "Tout": [t.dtype for t in inputs],
            "output_shapes": arg_shapes, "ref_mask": [0] * n, "n_vars": n,
            "back_prop": False, "record": False}


__all__ = []
