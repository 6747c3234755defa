"""tf.import_graph_def: adds the nodes of a GraphDef (TF's or dtf's) to the default graph.

Nodes are created in dependency order (a GraphDef may list them in any order) under the
``name`` scope, with their attrs turned into dtf values (dtf/framework/graph_io.py). An op
type dtf lacks is an error naming the node; so is an input naming a missing node.
"""
from __future__ import annotations

import contextlib

from . import dtypes, graph_io
from . import graph_pb as pb
from . import op_registry
from . import ops as _ops

# attrs TF records that no dtf op reads: dropped on import
_IGNORED_ATTRS = frozenset({"_output_shapes", "_user_specified_name", "_has_manual_control_dependencies",
                            "experimental_debug_info", "use_cudnn_on_gpu", "grad_a", "grad_b",
                            "explicit_paddings", "Truncate", "_XlaCompile", "_XlaScope"})


# TF op types dtf spells differently but computes the same way (dtf's If/While run any
# body; TF's Stateless* forms only promise TF's optimizer the bodies have no side effects)
_OP_TYPE_ALIASES = {"AddV2": "Add", "StatelessIf": "If", "StatelessWhile": "While"}

# dtf op type -> "module:function(graph, node, inputs, attrs, library) -> attrs": ops whose
# attrs name functions of the GraphDef's library, turned into the bodies dtf's op keeps
_FUNCTION_ATTR_IMPORTERS = {
    "If": "dtf.ops.control_flow_import:if_attrs",
    "While": "dtf.ops.control_flow_import:while_attrs",
}


def _attr_fixups_cast(attrs):
    attrs.setdefault("T", attrs.get("SrcT"))


# op type -> function(attrs) making a TF node's attrs into what dtf's op definition reads
_ATTR_FIXUPS = {"Cast": _attr_fixups_cast}


# -- TF op types built from dtf ops --------------------------------------------------------
def _expand_shape_n(node, inputs, attrs):
    """ShapeN (TF's gradients of conv and concat use it): one Shape per input."""
    from dtf.ops import array_ops

    out_type = attrs.get("out_type") or dtypes.int32
    return [array_ops.shape(t, out_type=out_type, name=f"{node.name}_{i}")
            for i, t in enumerate(inputs)]


def _expand_concat_offset(node, inputs, attrs):
    """ConcatOffset (concat's gradient): input i's offset is the sum of the earlier shapes
    along concat_dim, 0 elsewhere."""
    import numpy as np

    from dtf.ops import math_ops

    concat_dim, shapes = inputs[0], inputs[1:]
    rank = shapes[0].shape.as_list()[0]
    if rank is None:
        raise ValueError("ConcatOffset: the rank of the shapes must be known")
    positions = _ops.convert_to_tensor(np.arange(rank, dtype=np.int32), name=f"{node.name}/positions")
    mask = math_ops.cast(math_ops.equal(positions, concat_dim), dtypes.int32, name=f"{node.name}/mask")
    offsets, total = [], None
    for i, s in enumerate(shapes):
        offsets.append(math_ops.multiply(mask, total if total is not None else 0, name=f"{node.name}_{i}"))
        total = s if total is None else math_ops.add(total, s)
    return offsets


def _expand_initialized_value(which):
    def expand(node, inputs, attrs):
        from dtf.ops import value_or_initial_io

        return getattr(value_or_initial_io, which)(node, inputs, attrs)

    return expand


# TF op types dtf has no kernel for but builds from ops it has: node -> its output tensors.
# Switch/RefSwitch/Merge only in the shape of initialized_value()'s cond.
_EXPANSIONS = {"ShapeN": _expand_shape_n, "ConcatOffset": _expand_concat_offset,
               "Switch": _expand_initialized_value("expand_switch"),
               "RefSwitch": _expand_initialized_value("expand_switch"),
               "Merge": _expand_initialized_value("expand_merge")}


def _expand(graph, node, inputs, controls, scope):
    with contextlib.ExitStack() as stack:
        stack.enter_context(_ops.control_dependencies(controls))
        if node.device:
            stack.enter_context(graph.device(node.device))
        return _Expanded(_EXPANSIONS[node.op](node, inputs, _node_attrs(node, scope)))


class _Expanded:
    """An expanded node as the rest of the import sees it: outputs, and an op to depend on."""

    def __init__(self, outputs):
        self.outputs = outputs
        self.name = outputs[0].op.name
        self._ops = [t.op for t in outputs]


# -- importing ------------------------------------------------------------------------------
def _as_graph_def(graph_def) -> pb.GraphDef:
    if isinstance(graph_def, pb.GraphDef):
        return graph_def
    if hasattr(graph_def, "SerializeToString") and hasattr(graph_def, "node"):
        return pb.GraphDef.FromString(graph_def.SerializeToString())  # e.g. TF's own class
    raise TypeError(f"graph_def must be a GraphDef proto; got {type(graph_def).__name__}")


def split_input(name: str):
    """'^x' -> ('x', None); 'x:1' -> ('x', 1); 'x' -> ('x', 0)."""
    if name.startswith("^"):
        return name[1:], None
    op, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return op, int(idx)
    return name, 0


def dependency_order(by_name: dict, source_of, cycle_error) -> list:
    """The nodes of ``by_name`` ({name: NodeDef}) with every node after the nodes it reads
    (``source_of(input string)`` names the producer; inputs from elsewhere are ignored).
    A cycle raises ``cycle_error(node name)``. Iterative, so deep graphs do not hit the
    recursion limit."""
    order, state = [], {}  # state: 1 while a node's inputs are being placed, 2 once placed
    for start in by_name:
        stack = [(start, False)]
        while stack:
            name, done = stack.pop()
            if done:
                state[name] = 2
                order.append(by_name[name])
                continue
            if state.get(name) == 2:
                continue
            if state.get(name) == 1:
                raise cycle_error(name)
            state[name] = 1
            stack.append((name, True))
            for inp in by_name[name].input:
                src = source_of(inp)
                if src in by_name and state.get(src) != 2:
                    stack.append((src, False))
    return order


def _topological(nodes):
    by_name = {}
    for node in nodes:
        if node.name in by_name:
            raise ValueError(f"import_graph_def: duplicate node name {node.name!r} in the GraphDef")
        by_name[node.name] = node
    def source_of(inp):
        # a TF1 loop's NextIteration -> Merge edge is its back edge: the loop is rebuilt
        # as one While (cond_v1_import), so ordering ignores it
        src = split_input(inp)[0]
        node = by_name.get(src)
        return None if node is not None and node.op == "NextIteration" else src

    return dependency_order(
        by_name, source_of,
        lambda name: ValueError(f"import_graph_def: the GraphDef has a cycle through node "
                                f"{name!r} (only a TF1 while loop's NextIteration -> Merge edge may close one)"))


def _normalized_input_map(graph, input_map):
    out = {}
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be strings, got {key!r}")
        src, idx = split_input(key)
        if idx is None:
            out[("^", src)] = graph.as_graph_element(value, allow_tensor=False, allow_operation=True)
        elif getattr(value, "_folded_graph_value", False):
            # a value a GraphDef holds as a variant that dtf keeps as a Python object (a
            # Dataset): only the importers that fold such nodes read it
            out[(src, idx)] = value
        else:
            out[(src, idx)] = _ops.convert_to_tensor(value)
    return out


def _node_attrs(node, prefix: str) -> dict:
    attrs = {}
    for key, value in node.attr.items():
        if key in _IGNORED_ATTRS:
            continue
        try:
            attrs[key] = graph_io.attr_python(value)
        except ValueError as e:
            raise ValueError(f"import_graph_def: node {node.name!r} ({node.op}): attr {key!r}: {e}") from None
    if "_class" in attrs:
        attrs["_class"] = [f"loc:@{prefix}{c[len('loc:@'):]}" if c.startswith("loc:@") else c
                           for c in attrs["_class"]]
    fixup = _ATTR_FIXUPS.get(node.op)
    if fixup is not None:
        fixup(attrs)
    return attrs


def import_graph_def(graph_def, input_map=None, return_elements=None, name=None, op_dict=None,
                     producer_op_list=None):
    """Imports ``graph_def`` into the default graph under the name scope ``name``
    ("import" by default; "" for none). ``input_map`` maps names in ``graph_def``
    ("x:0", "x", "^x") to Tensors/Operations of this graph to use instead;
    ``return_elements`` names the imported Tensors ("y:0") or Operations ("train") to return."""
    if op_dict is not None:
        raise ValueError("import_graph_def: op_dict is deprecated and not supported by dtf")
    if producer_op_list is not None:
        raise NotImplementedError("import_graph_def: producer_op_list is not supported by dtf")
    graph_def = _as_graph_def(graph_def)
    graph = _ops.get_default_graph()
    mapped = _normalized_input_map(graph, input_map)
    unused = set(mapped)
    created = {}
    library = None
    if graph_def.library.function:
        from .function_def import FunctionLibrary

        library = FunctionLibrary.from_proto(graph_def.library)
    from dtf.ops import cond_v1_import  # TF1 conds and loops become dtf's If and While

    nodes = _topological(list(graph_def.node))
    with graph.name_scope(None if name == "" else (name or "import")) as scope:
        def resolve(inp):
            src, idx = split_input(inp)
            key = ("^", src) if idx is None else (src, idx)
            if key in mapped:
                unused.discard(key)
                return mapped[key]
            if src not in created:
                raise ValueError(f"input {inp!r} names a node that is not in the GraphDef")
            op = created[src]
            if idx is None:
                return op._ops if isinstance(op, _Expanded) else op
            if idx >= len(op.outputs):
                raise ValueError(f"input {inp!r}: {src!r} has only {len(op.outputs)} outputs")
            return op.outputs[idx]

        def create(node, inputs, controls):
            # inside a rebuilt TF1 cond's branch, control inputs from the graph around
            # become control inputs of the If (the branch's graph cannot hold them)
            g = _ops.get_default_graph()
            inner = []
            for c in controls:
                if c.graph is g:
                    inner.append(c)
                else:
                    g._add_outer_control(c)
            return create_node(g, node, inputs, inner, scope, library)

        analysis = cond_v1_import.analyse(nodes)
        if analysis is None:
            for node in nodes:
                created[node.name] = create(node, *cond_v1_import.node_inputs(node, resolve))
        else:
            level = cond_v1_import.Level(analysis, 0, [n.name for n in nodes])
            cond_v1_import.import_level(level, resolve, created, create)
    if unused:
        names = sorted(f"^{k[1]}" if k[0] == "^" else f"{k[0]}:{k[1]}" for k in unused)
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: [{', '.join(names)}]")
    if return_elements is None:
        return None
    return [_return_element(created, r) for r in return_elements]


def _dataset_import(op_type):
    """The importer of a TF dataset or iterator node, which dtf folds into its datasets
    (dtf/data/graph_import.py, loaded on first use), else None. It may return None for a
    node it leaves to the usual import (an Identity of a tensor, not of a dataset)."""
    from dtf.data.graph_import import IMPORTS

    return IMPORTS.get(op_type)


def create_node(graph, node, inputs, controls, scope, library=None, where="import_graph_def"):
    """The dtf op (or _Expanded ops) of one NodeDef of a GraphDef or of a FunctionDef's body,
    given its resolved inputs and control inputs."""
    op_type = _OP_TYPE_ALIASES.get(node.op, node.op)
    folded = _dataset_import(node.op)
    if not op_registry.has_op(op_type) and node.op not in _EXPANSIONS and folded is None:
        raise ValueError(f"{where}: node {node.name!r} has op type {node.op!r}, "
                         "which dtf does not have")
    try:
        folded = folded and folded(node, inputs, controls, library)
        if folded is not None:
            return folded
        if node.op in _EXPANSIONS:
            return _expand(graph, node, inputs, controls, scope)
        attrs = _node_attrs(node, scope)
        if op_type in _FUNCTION_ATTR_IMPORTERS:
            attrs = _function_attr_importer(op_type)(graph, node, inputs, attrs, library)
        op = graph.create_op(op_type, inputs, name=node.name, attrs=attrs)
    except (TypeError, KeyError, ValueError) as e:
        raise ValueError(f"{where}: node {node.name!r} ({node.op}): {e}") from e
    for c in controls:
        op._add_control_input(c)
    if node.device:
        op._set_device(node.device)
    return op


def _function_attr_importer(op_type):
    from .node_export import resolve_lazy

    return resolve_lazy(_FUNCTION_ATTR_IMPORTERS, op_type)


def _return_element(created, name: str):
    src, idx = split_input(name)
    op = created.get(src)
    if op is None:
        raise ValueError(f"Requested return_element {name!r} not found in graph_def.")
    if ":" not in name:
        if isinstance(op, _Expanded):
            raise ValueError(f"Requested return_element {name!r} is a {src} node, which dtf "
                             "builds from several ops: ask for its outputs ('name:i') instead.")
        return op
    if idx >= len(op.outputs):
        raise ValueError(f"Requested return_element {name!r} not found in graph_def.")
    return op.outputs[idx]
