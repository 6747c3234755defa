"""The SavedModel protos (tensorflow/core/protobuf/{saved_model,meta_graph}.proto): TensorInfo,
SignatureDef, a MetaGraphDef with its ``signature_def`` map, and SavedModel. Field numbers
are TF's, so saved_model.pb is read by TF's loader and serving tools."""
from __future__ import annotations

from dtf.framework import graph_pb as pb
from dtf.framework.protowire import Field, Message
from dtf.framework.protowire import fields as _fields


class CooSparse(Message):
    FIELDS = _fields((1, "values_tensor_name", "string"), (2, "indices_tensor_name", "string"),
                     (3, "dense_shape_tensor_name", "string"))


class TensorInfo(Message):
    CooSparse = CooSparse
    FIELDS = _fields(Field(1, "name", "string", oneof="encoding"),
                     Field(4, "coo_sparse", "message", CooSparse, oneof="encoding"),
                     (2, "dtype", "enum"), (3, "tensor_shape", "message", pb.TensorShapeProto))


class _TensorInfoEntry(Message):
    FIELDS = _fields((1, "key", "string"), (2, "value", "message", TensorInfo))


class SignatureDef(Message):
    FIELDS = _fields(Field(1, "inputs", "map", _TensorInfoEntry),
                     Field(2, "outputs", "map", _TensorInfoEntry), (3, "method_name", "string"))


class _SignatureEntry(Message):
    FIELDS = _fields((1, "key", "string"), (2, "value", "message", SignatureDef))


class AssetFileDef(Message):
    FIELDS = _fields((1, "tensor_info", "message", TensorInfo), (2, "filename", "string"))


class MetaGraphDef(Message):
    """pb.MetaGraphDef plus the SavedModel fields (signature_def, asset_file_def)."""
    MetaInfoDef = pb.MetaInfoDef
    FIELDS = pb.MetaGraphDef.FIELDS + _fields(
        Field(5, "signature_def", "map", _SignatureEntry),
        Field(6, "asset_file_def", "message", AssetFileDef, repeated=True))


class SavedModel(Message):
    FIELDS = _fields((1, "saved_model_schema_version", "int64"),
                     Field(2, "meta_graphs", "message", MetaGraphDef, repeated=True))
