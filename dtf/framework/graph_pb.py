"""TF's graph protos as hand-written messages: GraphDef, NodeDef, AttrValue, TensorProto,
MetaGraphDef, SaverDef, CollectionDef, VariableDef (tensorflow/core/framework/*.proto and
tensorflow/core/protobuf/{meta_graph,saver}.proto). Field numbers and types are TF's, so
``SerializeToString()`` gives bytes TF's generated classes parse, and the other way round.
"""
from __future__ import annotations

from .protowire import Field, Message
from .protowire import fields as _fields

# tensorflow/core/framework/types.proto: DataType enum values by dtf dtype name.
DATATYPE_ENUM = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "complex64": 8, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "complex128": 18,
    "float16": 19, "resource": 20, "variant": 21, "uint32": 22, "uint64": 23,
}
DATATYPE_NAME = {v: k for k, v in DATATYPE_ENUM.items()}
_REF_OFFSET = 100  # DT_FLOAT_REF = 101: a ref-typed edge (a Variable's output)
_TF_TYPE_NAMES = {"float32": "FLOAT", "float64": "DOUBLE", "float16": "HALF", "complex64": "COMPLEX64",
                  "complex128": "COMPLEX128"}
# DataType names as TF's text format spells them (DT_FLOAT, DT_INT64_REF, ...)
DATATYPE_NAMES = {f"DT_{_TF_TYPE_NAMES.get(k, k.upper())}{ref}": v + off
                  for k, v in DATATYPE_ENUM.items() for ref, off in (("", 0), ("_REF", _REF_OFFSET))}


# dtf DTypes TF spells as another type: a window of Dataset.window is a nested dataset,
# which is a variant tensor in TF's graphs
_WRITTEN_AS = {"dataset_window": "variant"}


def datatype_enum(dtype) -> int:
    """TF's DataType number of a dtf DType (or dtype name)."""
    name = getattr(dtype, "name", dtype)
    name = _WRITTEN_AS.get(name, name)
    try:
        return DATATYPE_ENUM[name]
    except KeyError:
        raise ValueError(f"dtype {name} has no TensorFlow DataType number") from None


def datatype_name(enum: int) -> str:
    """dtf dtype name of TF's DataType number (a ``_REF`` type gives its base type);
    ValueError for a type dtf has no dtype for (bfloat16, complex, resource, ...)."""
    from . import dtypes

    name = DATATYPE_NAME.get(enum % _REF_OFFSET if enum > _REF_OFFSET else enum)
    try:
        dtypes.as_dtype(name)
    except (TypeError, ValueError, KeyError):
        spelled = next((k for k, v in DATATYPE_NAMES.items() if v == enum), str(enum))
        raise ValueError(f"TensorFlow DataType {spelled} is not supported by dtf") from None
    return name


class TensorShapeDim(Message):
    FIELDS = _fields((1, "size", "int64"), (2, "name", "string"))


class TensorShapeProto(Message):
    Dim = TensorShapeDim
    FIELDS = _fields(Field(2, "dim", "message", TensorShapeDim, repeated=True),
                     (3, "unknown_rank", "bool"))


class TensorProto(Message):
    FIELDS = _fields(
        Field(1, "dtype", "enum", enum_names=DATATYPE_NAMES),
        (2, "tensor_shape", "message", TensorShapeProto), (3, "version_number", "int32"), (4, "tensor_content", "bytes"),
        Field(5, "float_val", "float", repeated=True, packed=True),
        Field(6, "double_val", "double", repeated=True, packed=True),
        Field(7, "int_val", "int32", repeated=True, packed=True),
        Field(8, "string_val", "bytes", repeated=True),
        Field(10, "int64_val", "int64", repeated=True, packed=True),
        Field(11, "bool_val", "bool", repeated=True, packed=True),
        Field(13, "half_val", "int32", repeated=True, packed=True),
        Field(16, "uint32_val", "uint64", repeated=True, packed=True),
        Field(17, "uint64_val", "uint64", repeated=True, packed=True),
    )


class AttrValue(Message):
    pass  # fields below: AttrValue and ListValue / NameAttrList refer to each other


class NameAttrListEntry(Message):
    FIELDS = _fields((1, "key", "string"), (2, "value", "message", AttrValue))


class NameAttrList(Message):
    FIELDS = _fields((1, "name", "string"), Field(2, "attr", "map", NameAttrListEntry))


class ListValue(Message):
    FIELDS = _fields(
        Field(2, "s", "bytes", repeated=True),
        Field(3, "i", "int64", repeated=True, packed=True),
        Field(4, "f", "float", repeated=True, packed=True),
        Field(5, "b", "bool", repeated=True, packed=True),
        Field(6, "type", "enum", repeated=True, packed=True, enum_names=DATATYPE_NAMES),
        Field(7, "shape", "message", TensorShapeProto, repeated=True),
        Field(8, "tensor", "message", TensorProto, repeated=True),
        Field(9, "func", "message", NameAttrList, repeated=True),
    )


AttrValue.FIELDS = _fields(
    Field(1, "list", "message", ListValue, oneof="value"),
    Field(2, "s", "bytes", oneof="value"), Field(3, "i", "int64", oneof="value"),
    Field(4, "f", "float", oneof="value"), Field(5, "b", "bool", oneof="value"),
    Field(6, "type", "enum", oneof="value", enum_names=DATATYPE_NAMES),
    Field(7, "shape", "message", TensorShapeProto, oneof="value"),
    Field(8, "tensor", "message", TensorProto, oneof="value"),
    Field(9, "placeholder", "string", oneof="value"),
    Field(10, "func", "message", NameAttrList, oneof="value"),
)
AttrValue.__init_subclass__.__func__(AttrValue)  # rebuild the lookup tables
AttrValue.ListValue = ListValue


class AttrEntry(Message):
    FIELDS = _fields((1, "key", "string"), (2, "value", "message", AttrValue))


class NodeDef(Message):
    FIELDS = _fields((1, "name", "string"), (2, "op", "string"),
                     Field(3, "input", "string", repeated=True), (4, "device", "string"),
                     Field(5, "attr", "map", AttrEntry))


class VersionDef(Message):
    FIELDS = _fields((1, "producer", "int32"), (2, "min_consumer", "int32"),
                     Field(3, "bad_consumers", "int32", repeated=True, packed=True))


class ArgDef(Message):
    """One input or output argument of a function's signature (OpDef.ArgDef)."""
    FIELDS = _fields((1, "name", "string"), (2, "description", "string"),
                     Field(3, "type", "enum", enum_names=DATATYPE_NAMES), (4, "type_attr", "string"),
                     (5, "number_attr", "string"), (6, "type_list_attr", "string"),
                     (16, "is_ref", "bool"))


class OpDef(Message):
    """A function's signature (tensorflow/core/framework/op_def.proto; the attr, deprecation
    and full-type fields are skipped: a function's signature has none)."""
    ArgDef = ArgDef
    FIELDS = _fields((1, "name", "string"), Field(2, "input_arg", "message", ArgDef, repeated=True),
                     Field(3, "output_arg", "message", ArgDef, repeated=True),
                     Field(20, "control_output", "string", repeated=True),
                     (5, "summary", "string"), (6, "description", "string"),
                     (17, "is_stateful", "bool"))


class StringEntry(Message):
    FIELDS = _fields((1, "key", "string"), (2, "value", "string"))


class FunctionDef(Message):
    """A graph function (tensorflow/core/framework/function.proto): a signature, its nodes
    (inputs spelled ``arg`` or ``node:output_arg:index``) and which tensor each output
    (``ret``) and control output (``control_ret``) is."""
    FIELDS = _fields((1, "signature", "message", OpDef),
                     Field(3, "node_def", "message", NodeDef, repeated=True),
                     Field(4, "ret", "map", StringEntry), Field(5, "attr", "map", AttrEntry),
                     Field(6, "control_ret", "map", StringEntry))


class GradientDef(Message):
    FIELDS = _fields((1, "function_name", "string"), (2, "gradient_func", "string"))


class FunctionDefLibrary(Message):
    """The functions a GraphDef's nodes name in their ``func`` attrs (control-flow bodies)."""
    FIELDS = _fields(Field(1, "function", "message", FunctionDef, repeated=True),
                     Field(2, "gradient", "message", GradientDef, repeated=True))


class GraphDef(Message):
    FIELDS = _fields(Field(1, "node", "message", NodeDef, repeated=True),
                     (2, "library", "message", FunctionDefLibrary),
                     (3, "version", "int32"), (4, "versions", "message", VersionDef))


class SaverDef(Message):
    """What a built Saver runs: the tensor to feed the path into, the save and restore ops."""

    LEGACY, V1, V2 = 0, 1, 2
    FIELDS = _fields((1, "filename_tensor_name", "string"), (2, "save_tensor_name", "string"),
                     (3, "restore_op_name", "string"), (4, "max_to_keep", "int32"),
                     (5, "sharded", "bool"), (6, "keep_checkpoint_every_n_hours", "float"),
                     Field(7, "version", "enum", enum_names={"LEGACY": 0, "V1": 1, "V2": 2}))


class NodeList(Message):
    FIELDS = _fields(Field(1, "value", "string", repeated=True))


class BytesList(Message):
    FIELDS = _fields(Field(1, "value", "bytes", repeated=True))


class Int64List(Message):
    FIELDS = _fields(Field(1, "value", "int64", repeated=True, packed=True))


class FloatList(Message):
    FIELDS = _fields(Field(1, "value", "float", repeated=True, packed=True))


class CollectionDef(Message):
    NodeList, BytesList, Int64List, FloatList = NodeList, BytesList, Int64List, FloatList
    FIELDS = _fields(Field(1, "node_list", "message", NodeList, oneof="kind"),
                     Field(2, "bytes_list", "message", BytesList, oneof="kind"),
                     Field(3, "int64_list", "message", Int64List, oneof="kind"),
                     Field(4, "float_list", "message", FloatList, oneof="kind"))


class SaveSliceInfoDef(Message):
    FIELDS = _fields((1, "full_name", "string"),
                     Field(2, "full_shape", "int64", repeated=True, packed=True),
                     Field(3, "var_offset", "int64", repeated=True, packed=True),
                     Field(4, "var_shape", "int64", repeated=True, packed=True))


class VariableDef(Message):
    FIELDS = _fields((1, "variable_name", "string"), (2, "initializer_name", "string"),
                     (3, "snapshot_name", "string"),
                     (4, "save_slice_info_def", "message", SaveSliceInfoDef),
                     (5, "is_resource", "bool"), (6, "initial_value_name", "string"),
                     (7, "trainable", "bool"), (8, "synchronization", "enum"),
                     (9, "aggregation", "enum"))


class MetaInfoDef(Message):
    FIELDS = _fields((1, "meta_graph_version", "string"), Field(4, "tags", "string", repeated=True),
                     (5, "tensorflow_version", "string"), (6, "tensorflow_git_version", "string"),
                     (7, "stripped_default_attrs", "bool"))


class CollectionEntry(Message):
    FIELDS = _fields((1, "key", "string"), (2, "value", "message", CollectionDef))


class MetaGraphDef(Message):
    MetaInfoDef = MetaInfoDef
    FIELDS = _fields((1, "meta_info_def", "message", MetaInfoDef),
                     (2, "graph_def", "message", GraphDef), (3, "saver_def", "message", SaverDef),
                     Field(4, "collection_def", "map", CollectionEntry))


__all__ = ["AttrValue", "CollectionDef", "FunctionDef", "FunctionDefLibrary", "GraphDef",
           "MetaGraphDef", "NameAttrList", "NodeDef", "OpDef", "SaverDef", "TensorProto",
           "TensorShapeProto", "VariableDef", "VersionDef"]
