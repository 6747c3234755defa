"""dtf Graphs as TF's GraphDef protos: ``Graph.as_graph_def()`` and ``Operation.node_def``.

dtf keeps attrs as plain Python values (DType, int, float, bool, str, numpy array, lists,
a shape as a list of dims with None for unknown). TF's AttrValue says which kind a value
is; the one ambiguity, a shape versus a list of ints, is settled by the attr's name
(``_SHAPE_ATTRS``), as TF's op definitions would.
"""
from __future__ import annotations

import numpy as np

from . import dtypes
from . import graph_pb as pb

GRAPH_DEF_PRODUCER = 27  # a TF1-era GraphDef version: no consumer behaviour hangs on it
_SHAPE_LIST_ATTRS = frozenset({"shapes", "output_shapes", "_output_shapes", "dense_shapes",
                               "context_dense_shapes", "feature_list_dense_shapes"})
_SHAPE_ATTRS = frozenset({"shape", "element_shape", "output_shape"}) | _SHAPE_LIST_ATTRS


# -- tensors -----------------------------------------------------------------------------------
def make_tensor_proto(value) -> pb.TensorProto:
    """A TensorProto of a numpy value: raw little-endian ``tensor_content`` for numbers,
    ``string_val`` for strings (as TF writes constants)."""
    arr = np.asarray(value)
    dtype = dtypes.as_dtype(arr.dtype)
    proto = pb.TensorProto(dtype=pb.datatype_enum(dtype), tensor_shape=shape_proto(arr.shape))
    if dtype.name == "string":
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode()
                                for v in arr.reshape(-1))
    elif arr.size:
        npd = np.dtype(dtype.as_numpy_dtype).newbyteorder("<")
        proto.tensor_content = np.ascontiguousarray(arr, dtype=npd).tobytes()
    return proto


_VAL_FIELDS = {"float32": "float_val", "float64": "double_val", "int32": "int_val",
               "int16": "int_val", "int8": "int_val", "uint8": "int_val", "uint16": "int_val",
               "int64": "int64_val", "bool": "bool_val", "string": "string_val",
               "float16": "half_val"}


def make_ndarray(proto: pb.TensorProto) -> np.ndarray:
    """The numpy value of a TensorProto (TF's tensor_util.MakeNdarray)."""
    name = pb.datatype_name(proto.dtype)
    shape = [d.size for d in proto.tensor_shape.dim]
    npd = np.dtype(dtypes.as_dtype(name).as_numpy_dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if name != "string" and proto.tensor_content:
        return np.frombuffer(proto.tensor_content, npd.newbyteorder("<")).astype(npd).reshape(shape)
    values = list(getattr(proto, _VAL_FIELDS.get(name, "float_val")))
    if name == "string":
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
    elif name == "float16":
        arr = np.asarray(values, np.uint16).view(np.float16)
    else:
        arr = np.asarray(values, dtype=npd)
    if arr.size == n:
        return arr.reshape(shape)
    if arr.size == 0:
        return np.zeros(shape, npd) if name != "string" else np.full(shape, b"", object)
    # TF stores a constant filled with its last value repeated as fewer values
    out = np.empty(n, dtype=arr.dtype)
    out[:arr.size] = arr
    out[arr.size:] = arr[-1]
    return out.reshape(shape)


def shape_proto(dims) -> pb.TensorShapeProto:
    if dims is None:
        return pb.TensorShapeProto(unknown_rank=True)
    proto = pb.TensorShapeProto()
    for d in dims:
        proto.dim.add(size=-1 if d is None else int(d))
    return proto


def shape_value(proto: pb.TensorShapeProto):
    if proto.unknown_rank:
        return None
    return [None if d.size < 0 else d.size for d in proto.dim]


# -- attrs -------------------------------------------------------------------------------------
class FuncRef:
    """The value of a ``func`` attr: the name of a function in the GraphDef's library (and
    the attrs it is instantiated with), as If's ``then_branch`` or While's ``body`` hold."""

    __slots__ = ("name", "attrs")

    def __init__(self, name: str, attrs=None):
        self.name = name
        self.attrs = dict(attrs or {})

    def __eq__(self, other):
        return isinstance(other, FuncRef) and (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"FuncRef({self.name!r})"


def _dims(value):
    if value is None:
        return None
    if hasattr(value, "as_list"):
        return value.as_list() if value.dims is not None else None
    return [None if d is None else int(d) for d in value]


def attr_value(name: str, value) -> pb.AttrValue:
    """The AttrValue of one dtf attr."""
    if name in _SHAPE_ATTRS:
        if name in _SHAPE_LIST_ATTRS:
            return pb.AttrValue(list=pb.ListValue(shape=[shape_proto(_dims(s)) for s in value]))
        return pb.AttrValue(shape=shape_proto(_dims(value)))
    if isinstance(value, dtypes.DType):
        return pb.AttrValue(type=pb.datatype_enum(value))
    if isinstance(value, (bool, np.bool_)):
        return pb.AttrValue(b=bool(value))
    if isinstance(value, (int, np.integer)):
        return pb.AttrValue(i=int(value))
    if isinstance(value, (float, np.floating)):
        return pb.AttrValue(f=float(value))
    if isinstance(value, (str, bytes)):
        return pb.AttrValue(s=value)
    if isinstance(value, np.ndarray):
        return pb.AttrValue(tensor=make_tensor_proto(value))
    if isinstance(value, (list, tuple)):
        return pb.AttrValue(list=_list_value(name, list(value)))
    if isinstance(value, FuncRef):
        return pb.AttrValue(func=pb.NameAttrList(
            name=value.name, attr={k: attr_value(k, v) for k, v in value.attrs.items()}))
    if isinstance(value, dict) and "nodes" in value:
        # A body dtf keeps as plain data: its op's exporter (dtf/framework/node_export.py)
        # writes it as a FunctionDef; an op with none cannot be exported.
        raise TypeError(f"attr {name!r}: a dtf function body, and no exporter writes this op's "
                        "bodies as FunctionDefs")
    text = repr(value)
    text = text if len(text) <= 200 else text[:200] + "..."
    raise TypeError(f"attr {name!r}: no GraphDef encoding for a {type(value).__name__} ({text})")


def _list_value(name, items) -> pb.ListValue:
    out = pb.ListValue()
    if not items:
        return out
    first = items[0]
    if isinstance(first, dtypes.DType):
        out.type.extend(pb.datatype_enum(t) for t in items)
    elif isinstance(first, (bool, np.bool_)):
        out.b.extend(bool(v) for v in items)
    elif isinstance(first, (int, np.integer)):
        out.i.extend(int(v) for v in items)
    elif isinstance(first, (float, np.floating)):
        out.f.extend(float(v) for v in items)
    elif isinstance(first, (str, bytes)):
        out.s.extend(items)
    elif isinstance(first, np.ndarray):
        out.tensor.extend(make_tensor_proto(v) for v in items)
    else:
        raise TypeError(f"attr {name!r}: no GraphDef encoding for a list of {type(first).__name__}")
    return out


def _text(b: bytes):
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b


def attr_python(value: pb.AttrValue):
    """The dtf attr value of a TF AttrValue."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "type":
        return dtypes.as_dtype(pb.datatype_name(value.type))
    if kind == "shape":
        return shape_value(value.shape)
    if kind == "tensor":
        return make_ndarray(value.tensor)
    if kind == "s":
        return _text(value.s)
    if kind in ("i", "f", "b"):
        return getattr(value, kind)
    if kind == "func":
        return FuncRef(value.func.name, {k: attr_python(v) for k, v in value.func.attr.items()})
    if kind == "list":
        lv = value.list
        if lv.type:
            return [dtypes.as_dtype(pb.datatype_name(t)) for t in lv.type]
        if lv.shape:
            return [shape_value(s) for s in lv.shape]
        if lv.tensor:
            return [make_ndarray(t) for t in lv.tensor]
        if lv.s:
            return [_text(s) for s in lv.s]
        for field in ("i", "f", "b"):
            if getattr(lv, field):
                return list(getattr(lv, field))
        return []
    raise ValueError(f"AttrValue of kind {kind!r} is not supported by dtf")


# -- nodes and graphs ----------------------------------------------------------------------
def input_name(tensor) -> str:
    """GraphDef spells output 0 of op "x" as "x", the others "x:1"."""
    op, idx = tensor.op.name, tensor.value_index
    return op if idx == 0 else f"{op}:{idx}"


# attrs dtf's ops keep that TF's op definitions lack (TF warns about them on import);
# dtf/framework/importer.py puts them back from TF's own attrs
_DTF_ONLY_ATTRS = {"Cast": ("T",)}


def node_def(op, skip_unencodable=False) -> pb.NodeDef:
    """The NodeDef proto of a dtf Operation. An attr with no AttrValue form (a Python
    object some dtf op keeps) is a TypeError naming the op, or left out with
    ``skip_unencodable`` (for a picture of the graph, as TensorBoard's)."""
    return encode_node_def({"name": op.name, "op": op.type, "device": op.device, "attr": op.attrs},
                           [input_name(t) for t in op.inputs]
                           + [f"^{c.name}" for c in op.control_inputs], skip_unencodable)


def encode_node_def(d: dict, inputs, skip_unencodable=False, in_function=False) -> pb.NodeDef:
    """The NodeDef proto of a node dict (graph_def.NodeDef.to_dict form) with ``inputs``
    already spelled as the GraphDef or FunctionDef wants them. Inside a function,
    colocation attrs are left out: they name nodes of the graph around it."""
    node = pb.NodeDef(name=d["name"], op=d["op"], device=d.get("device") or "", input=inputs)
    dtf_only = _DTF_ONLY_ATTRS.get(d["op"], ())
    for name, value in d["attr"].items():
        if (value is None and name not in _SHAPE_ATTRS) or name in dtf_only:
            continue
        if in_function and name == "_class":
            continue
        try:
            node.attr[name] = attr_value(name, value)
        except (TypeError, ValueError) as e:
            if not skip_unencodable:
                raise TypeError(f"op {d['name']!r} ({d['op']}): {e}") from None
    return node


def _graph_input_name(name: str) -> str:
    """A node dict's "x:0" as a GraphDef input ("x")."""
    return name[:-2] if name.endswith(":0") and not name.startswith("^") else name


def graph_def(graph, skip_unencodable=False, add_shapes=False) -> pb.GraphDef:
    """The GraphDef proto of a dtf Graph, ops in creation order (a topological order).
    Ops that hold function bodies (tf.cond's If, tf.while_loop's While and its gradient)
    are written as TF's functional ops by their exporters (dtf/framework/node_export.py),
    their bodies as FunctionDefs in the GraphDef's ``library``."""
    from .node_export import has_exporter

    gd = pb.GraphDef(versions=pb.VersionDef(producer=GRAPH_DEF_PRODUCER))
    ops = graph.get_operations()
    if any(has_exporter(op.type) for op in ops):
        try:
            return _graph_def_with_functions(gd, ops, skip_unencodable, add_shapes)
        except TypeError:
            if not skip_unencodable:
                raise
            # a picture of the graph (TensorBoard's) still shows what has no TF form:
            # its nodes as dtf has them, without the attrs that cannot be written
            gd = pb.GraphDef(versions=pb.VersionDef(producer=GRAPH_DEF_PRODUCER))
    for op in ops:
        node = node_def(op, skip_unencodable)
        if add_shapes:
            _add_shapes(node, op)
        gd.node.append(node)
    return gd


def _add_shapes(node, op):
    node.attr["_output_shapes"] = pb.AttrValue(list=pb.ListValue(
        shape=[shape_proto(_dims(t.shape)) for t in op.outputs]))


def _graph_def_with_functions(gd, ops, skip_unencodable, add_shapes):
    from .function_def import FunctionLibrary
    from .graph_def import node_def_of
    from .node_export import export_nodes

    library = FunctionLibrary()
    by_name = {op.name: op for op in ops}
    for d in export_nodes([node_def_of(op).to_dict() for op in ops], library):
        node = encode_node_def(d, [_graph_input_name(i) for i in d["input"]], skip_unencodable)
        op = by_name.get(d["name"])
        if add_shapes and op is not None and len(op.outputs) == len(d["output_dtypes"]):
            _add_shapes(node, op)
        gd.node.append(node)
    if len(library):
        gd.library.CopyFrom(library.proto())
    return gd
