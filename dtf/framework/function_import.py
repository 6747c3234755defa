"""FunctionDefs of a GraphDef's library as dtf body graphs (the reverse of function_def.py).

A function is imported into a FuncGraph nested in the graph of the op that calls it: its
arguments become the body's argument placeholders, each node is created by the same code
as a GraphDef's node (dtf/framework/importer.py: op aliases, expansions, nested functions),
and ``node:output_arg:index`` names are resolved with TF's output-argument table. Node names
are prefixed by the calling op's name, so two calls of one function (or a loop's cond and
body, which dtf runs as one plan) never share a node name.
"""
from __future__ import annotations

from . import dtypes as _dtypes
from . import graph_pb as pb
from .func_graph import FuncGraph
from .function_def import output_index


def _resolve(fname, node_name, ref, args, created, nodes):
    """The tensor a FunctionDef input names: ``arg`` or ``node:output_arg:index``."""
    parts = ref.split(":")
    if len(parts) == 1:
        if ref in args:
            return args[ref]
        raise ValueError(f"function {fname!r}: node {node_name!r}: input {ref!r} is not an "
                         "argument of the function (a node's output is spelled node:arg:index)")
    if len(parts) != 3 or not parts[2].isdigit():
        raise ValueError(f"function {fname!r}: node {node_name!r}: input {ref!r} is not "
                         "node:output_arg:index")
    src, arg, idx = parts[0], parts[1], int(parts[2])
    op = created.get(src)
    if op is None:
        raise ValueError(f"function {fname!r}: node {node_name!r}: input {ref!r} names a node "
                         "that is not in the function")
    outputs = op.outputs
    k = output_index(nodes[src].op, _attrs_of(nodes[src]), arg, idx, len(outputs))
    return outputs[k]


def _attrs_of(node):
    from .graph_io import attr_python

    return {k: attr_python(v) for k, v in node.attr.items()
            if v.WhichOneof("value") not in (None, "func")}


def _order(fname, nodes):
    """FunctionDef nodes in dependency order (a FunctionDef may list them in any order; its
    inputs read ``node:output_arg:index``)."""
    from .importer import dependency_order

    return dependency_order(
        nodes, lambda inp: inp.lstrip("^").split(":")[0],
        lambda name: ValueError(f"function {fname!r}: its nodes form a cycle through {name!r}"))


def import_function(fdef: pb.FunctionDef, library, outer, name: str, arg_shapes=None):
    """``(body graph, output tensors, target ops)`` of ``fdef`` built in a FuncGraph under
    ``outer`` named ``name``; ``arg_shapes`` (one per argument, None for unknown) seed the
    placeholders' shapes."""
    from .importer import create_node

    sig = fdef.signature
    fname = sig.name
    fg = FuncGraph(name, outer)
    args, created = {}, {}
    nodes = {}
    for n in fdef.node_def:
        if n.name in nodes:
            raise ValueError(f"function {fname!r}: two nodes named {n.name!r}")
        nodes[n.name] = n
    with fg.as_default():
        for i, a in enumerate(sig.input_arg):
            if a.type_attr or a.number_attr or a.type_list_attr:
                raise ValueError(f"function {fname!r}: argument {a.name!r} is polymorphic "
                                 "(type or number attrs), which dtf does not import")
            shape = arg_shapes[i] if arg_shapes else None
            args[a.name] = fg.add_arg(_dtypes.as_dtype(pb.datatype_name(a.type)), _shape(shape),
                                      name=a.name)
        for n in _order(fname, nodes):
            inputs, controls = [], []
            for ref in n.input:
                if ref.startswith("^"):
                    src = ref[1:]
                    if src in created:
                        op = created[src]
                        controls.extend(op._ops if hasattr(op, "_ops") else [op])
                    elif src not in args:
                        raise ValueError(f"function {fname!r}: node {n.name!r}: control input "
                                         f"{ref!r} names no node of the function")
                    continue
                inputs.append(_resolve(fname, n.name, ref, args, created, nodes))
            created[n.name] = create_node(fg, n, inputs, controls, "", library,
                                          where=f"function {fname!r}")
        outputs = []
        for a in sig.output_arg:
            if a.name not in fdef.ret:
                raise ValueError(f"function {fname!r}: output {a.name!r} has no ret entry")
            outputs.append(_resolve(fname, "ret", fdef.ret[a.name], args, created, nodes))
        targets = []
        for c in sig.control_output:
            op = created.get(fdef.control_ret.get(c, c))
            if op is None:
                raise ValueError(f"function {fname!r}: control output {c!r} names no node")
            targets.append(op)
    return fg, outputs, targets


def _shape(dims):
    from .tensor_shape import TensorShape

    return TensorShape(dims)


__all__ = ["import_function"]
