"""The protobuf messages of TensorBoard event files.

Only what summaries need: ``Event`` (tensorflow/core/util/event.proto), ``Summary`` and
``HistogramProto`` (tensorflow/core/framework/summary.proto) and ``SessionLog``. Field
numbers and wire types are TF's, so the bytes read the same in TensorBoard and in TF's
generated classes; the codec is dtf/framework/protowire.py. A graph in an event file is a
full ``GraphDef`` (dtf/framework/graph_pb.py).
"""
from __future__ import annotations

from dtf.framework.protowire import DecodeError, Field, Message
from dtf.framework.protowire import fields as _fields
from dtf.framework.graph_pb import GraphDef, NodeDef, VersionDef  # noqa: F401 - re-exported


class HistogramProto(Message):
    FIELDS = _fields(
        (1, "min", "double"), (2, "max", "double"), (3, "num", "double"), (4, "sum", "double"),
        (5, "sum_squares", "double"),
        Field(6, "bucket_limit", "double", repeated=True, packed=True),
        Field(7, "bucket", "double", repeated=True, packed=True),
    )


class PluginData(Message):
    FIELDS = _fields((1, "plugin_name", "string"), (2, "content", "bytes"))


class SummaryMetadata(Message):
    PluginData = PluginData
    FIELDS = _fields(
        (1, "plugin_data", "message", PluginData), (2, "display_name", "string"),
        (3, "summary_description", "string"), (4, "data_class", "enum"),
    )


class SummaryImage(Message):
    FIELDS = _fields((1, "height", "enum"), (2, "width", "enum"), (3, "colorspace", "enum"),
                     (4, "encoded_image_string", "bytes"))


class SummaryAudio(Message):
    FIELDS = _fields((1, "sample_rate", "float"), (2, "num_channels", "int64"),
                     (3, "length_frames", "int64"), (4, "encoded_audio_string", "bytes"),
                     (5, "content_type", "string"))


class TensorShapeDim(Message):
    FIELDS = _fields((1, "size", "int64"), (2, "name", "string"))


class TensorShapeProto(Message):
    Dim = TensorShapeDim
    FIELDS = _fields(Field(2, "dim", "message", TensorShapeDim, repeated=True),
                     (3, "unknown_rank", "enum"))


class TensorProto(Message):
    """A tensor's value: numbers as little-endian ``tensor_content``, strings in
    ``string_val`` (what tensor summaries carry)."""

    FIELDS = _fields((1, "dtype", "enum"), (2, "tensor_shape", "message", TensorShapeProto),
                     (3, "version_number", "enum"), (4, "tensor_content", "bytes"),
                     Field(8, "string_val", "bytes", repeated=True))


class SummaryValue(Message):
    FIELDS = _fields(
        (7, "node_name", "string"), (1, "tag", "string"),
        (9, "metadata", "message", SummaryMetadata),
        Field(2, "simple_value", "float", oneof="value"),
        Field(3, "obsolete_old_style_histogram", "bytes", oneof="value"),
        Field(4, "image", "message", SummaryImage, oneof="value"),
        Field(5, "histo", "message", HistogramProto, oneof="value"),
        Field(6, "audio", "message", SummaryAudio, oneof="value"),
        Field(8, "tensor", "message", TensorProto, oneof="value"),
    )


class Summary(Message):
    Value = SummaryValue
    Image = SummaryImage
    Audio = SummaryAudio
    FIELDS = _fields(Field(1, "value", "message", SummaryValue, repeated=True))


class SessionLog(Message):
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    FIELDS = _fields((1, "status", "enum"), (2, "checkpoint_path", "string"), (3, "msg", "string"))


class TaggedRunMetadata(Message):
    FIELDS = _fields((1, "tag", "string"), (2, "run_metadata", "bytes"))


class Event(Message):
    FIELDS = _fields(
        (1, "wall_time", "double"), (2, "step", "int64"),
        Field(3, "file_version", "string", oneof="what"),
        Field(4, "graph_def", "bytes", oneof="what"),
        Field(5, "summary", "message", Summary, oneof="what"),
        Field(7, "session_log", "message", SessionLog, oneof="what"),
        Field(8, "tagged_run_metadata", "message", TaggedRunMetadata, oneof="what"),
        Field(9, "meta_graph_def", "bytes", oneof="what"),
    )


__all__ = ["DecodeError", "Event", "GraphDef", "HistogramProto", "NodeDef", "SessionLog",
           "Summary", "SummaryMetadata", "TaggedRunMetadata", "VersionDef"]
