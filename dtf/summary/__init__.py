"""``tf.summary`` (TF1): summary ops, event-file writers and the Summary/Event protos.

Event files are TensorBoard's format (TFRecord-framed ``Event`` protos), written and read
without tensorflow or protobuf installed.
"""
from dtf.summary.ops import histogram, merge, merge_all, scalar
from dtf.summary.proto import Event, HistogramProto, SessionLog, Summary, SummaryMetadata, TaggedRunMetadata
from dtf.summary.reader import summary_iterator
from dtf.summary.writer import FileWriter, FileWriterCache
from dtf.summary.media import audio, image, tensor_summary, text  # noqa: E402

__all__ = ["Event", "FileWriter", "FileWriterCache", "HistogramProto", "SessionLog", "Summary",
           "SummaryMetadata", "TaggedRunMetadata", "histogram", "merge", "merge_all", "scalar",
           "summary_iterator", "image", "audio", "text", "tensor_summary"]
