"""tf.graph_util: pruning a GraphDef to what some nodes need, and freezing variables into
constants so a graph serves without a checkpoint."""
from __future__ import annotations

import copy

from . import graph_io
from . import graph_pb as pb
from .importer import split_input

__all__ = ["convert_variables_to_constants", "extract_sub_graph", "import_graph_def"]

_VARIABLE_OPS = ("VariableV2", "Variable")


def _node_name(name: str) -> str:
    return split_input(name)[0]


def extract_sub_graph(graph_def, dest_nodes):
    """The GraphDef of the nodes ``dest_nodes`` need (inputs and control inputs), in
    their original order."""
    if not isinstance(graph_def, pb.GraphDef):
        raise TypeError("graph_def must be a graph_pb2.GraphDef proto.")
    if isinstance(dest_nodes, str):
        raise TypeError("dest_nodes must be a list.")
    by_name = {n.name: n for n in graph_def.node}
    for d in dest_nodes:
        if d not in by_name:
            raise AssertionError(f"{d} is not in graph")
    keep, stack = set(), list(dest_nodes)
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        keep.add(name)
        stack.extend(_node_name(i) for i in by_name[name].input)
    out = pb.GraphDef(versions=graph_def.versions)
    out.node.extend(copy.deepcopy(n) for n in graph_def.node if n.name in keep)
    _copy_library(graph_def, out)
    return out


def _copy_library(src, dst):
    """The functions control-flow nodes name travel with them (all of them: a function
    only names others, never a node of the graph)."""
    if src.library.function:
        dst.library.CopyFrom(copy.deepcopy(src.library))


def convert_variables_to_constants(sess, input_graph_def, output_node_names,
                                   variable_names_whitelist=None, variable_names_blacklist=None):
    """A copy of the graph that ``output_node_names`` need, with every variable replaced by
    a Const holding its current value in ``sess``."""
    inference = extract_sub_graph(input_graph_def, output_node_names)
    variables = [n.name for n in inference.node if n.op in _VARIABLE_OPS
                 and (variable_names_whitelist is None or n.name in variable_names_whitelist)
                 and (variable_names_blacklist is None or n.name not in variable_names_blacklist)]
    values = dict(zip(variables, sess.run([f"{v}:0" for v in variables]))) if variables else {}
    out = pb.GraphDef(versions=inference.versions)
    _copy_library(inference, out)
    for node in inference.node:
        if node.name in values:
            const = out.node.add(name=node.name, op="Const")
            const.attr["dtype"] = pb.AttrValue(type=node.attr["dtype"].type)
            const.attr["value"] = pb.AttrValue(tensor=graph_io.make_tensor_proto(values[node.name]))
            if node.device:
                const.device = node.device
        elif node.op == "Assign" and _node_name(node.input[0]) in values:
            continue  # an initializer of a frozen variable: nothing left to assign to
        else:
            out.node.append(copy.deepcopy(node))
    return out


def import_graph_def(*args, **kwargs):
    from .importer import import_graph_def as impl

    return impl(*args, **kwargs)


import_graph_def.__doc__ = "tf.import_graph_def (also found here in TF1)."
