"""Exporters: how an op that holds function bodies is written as TF's nodes.

dtf keeps a control-flow body (an If's branches, a While's cond and body) as plain data in
an attr, and some ops carry what only dtf's runtime reads (an If's run record feeding its
gradient). Each such op type has an exporter here, a function
``export(node, ctx) -> [node dicts]`` that turns one node dict (graph_def.NodeDef.to_dict
form) into the node dicts TF's GraphDef holds, writing the bodies as FunctionDefs into
``ctx.library`` (dtf/framework/function_def.py). The registry names modules, imported on the
first graph that needs them: an exported graph without such ops imports nothing.

Every node list is exported the same way, a graph's or a function body's, so a cond inside
a loop body is written by the same exporter as one at the top.
"""
from __future__ import annotations

import importlib

# op type -> "module:function" (or the function itself, once loaded)
_EXPORTERS: dict = {
    "If": "dtf.ops.control_flow_export:export_if",
    "While": "dtf.ops.control_flow_export:export_while",
    "_WhileGrad": "dtf.ops.control_flow_export:export_while_grad",
    "ValueOrInitial": "dtf.ops.value_or_initial_io:export_value_or_initial",
    "TensorArrayNew": "dtf.ops.tensor_array_export:export_new",
    "TensorArrayWrite": "dtf.ops.tensor_array_export:export_write",
    "TensorArrayScatter": "dtf.ops.tensor_array_export:export_scatter",
    "TensorArrayRead": "dtf.ops.tensor_array_export:export_read",
    "TensorArrayWriteGrad": "dtf.ops.tensor_array_export:export_write_grad",
    "TensorArrayScatterGrad": "dtf.ops.tensor_array_export:export_scatter_grad",
    "TensorArrayReadGrad": "dtf.ops.tensor_array_export:export_read_grad",
    "MakeIterator": "dtf.data.graph_export:export_make_iterator",
    "OneShotIterator": "dtf.data.graph_export:export_one_shot_iterator",
}


def register_node_exporter(op_type: str, target) -> None:
    """Registers the exporter of ``op_type``: a function or a ``"module:function"`` name."""
    prev = _EXPORTERS.get(op_type)
    if prev is not None and prev != target:
        raise ValueError(f"op type {op_type!r} already has an exporter: {prev!r}")
    _EXPORTERS[op_type] = target


def has_exporter(op_type: str) -> bool:
    return op_type in _EXPORTERS


def resolve_lazy(table: dict, key):
    """``table[key]``, where a ``"module:function"`` string (registered so that the module
    loads only when first needed) is imported once and replaced by the function."""
    target = table[key]
    if isinstance(target, str):
        module, _, fn = target.partition(":")
        target = getattr(importlib.import_module(module), fn)
        table[key] = target
    return target


def _exporter(op_type):
    return resolve_lazy(_EXPORTERS, op_type)


class ExportContext:
    """What an exporter sees besides its node: the library functions go to, every node
    of the list being exported (by name, as given), and a memo for state exporters share
    within one list (e.g. what a gradient op needs its forward op to output)."""

    def __init__(self, nodes, library):
        self.library = library
        self.nodes = {d["name"]: d for d in nodes}
        self.order = [d["name"] for d in nodes]
        self.memo: dict = {}


def export_nodes(nodes: list, library) -> list:
    """The node dicts of ``nodes`` as TF's GraphDef holds them (input names unchanged for
    the nodes kept; exporters say how theirs change)."""
    if not any(d["op"] in _EXPORTERS for d in nodes):
        return nodes
    ctx = ExportContext(nodes, library)
    out = []
    for d in nodes:
        if d["op"] in _EXPORTERS:
            try:
                out.extend(_exporter(d["op"])(d, ctx))
            except TypeError as e:  # what has no TF form, named by the op that holds it
                raise TypeError(f"{d['op']} '{d['name']}': {e}") from None
        else:
            out.append(d)
    renamed = ctx.memo.get("renamed_inputs")
    if renamed:  # an exporter replaced a tensor other nodes read (e.g. a run record)
        out = [_rename_inputs(d, renamed) for d in out]
    return out


def _rename_inputs(d, renamed):
    if not any(i in renamed for i in d["input"]):
        return d
    inputs = []
    for i in d["input"]:
        r = renamed.get(i, i)
        inputs.extend(r if isinstance(r, list) else [r])
    return dict(d, input=inputs)


__all__ = ["ExportContext", "export_nodes", "has_exporter", "register_node_exporter"]
