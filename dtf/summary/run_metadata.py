"""RunMetadata as the protobuf TensorBoard reads (tensorflow/core/protobuf/config.proto and
framework/step_stats.proto): the per-device, per-node timings of a traced step, which
FileWriter.add_run_metadata stores in an event."""
from __future__ import annotations

from dtf.framework.protowire import Field, Message
from dtf.framework.protowire import fields as _fields


class NodeExecStatsProto(Message):
    FIELDS = _fields((1, "node_name", "string"), (2, "all_start_micros", "int64"),
                     (3, "op_start_rel_micros", "int64"), (4, "op_end_rel_micros", "int64"),
                     (5, "all_end_rel_micros", "int64"), (8, "timeline_label", "string"))


class DeviceStepStatsProto(Message):
    FIELDS = _fields((1, "device", "string"),
                     Field(2, "node_stats", "message", NodeExecStatsProto, repeated=True))


class StepStatsProto(Message):
    FIELDS = _fields(Field(1, "dev_stats", "message", DeviceStepStatsProto, repeated=True))


class RunMetadataProto(Message):
    FIELDS = _fields((1, "step_stats", "message", StepStatsProto))


_TIMES = ("all_start_micros", "op_start_rel_micros", "op_end_rel_micros", "all_end_rel_micros")


def serialize_run_metadata(run_metadata) -> bytes:
    """The wire bytes of a tf.RunMetadata's step_stats (what TensorBoard's trace viewer
    shows); serialized bytes pass through."""
    if isinstance(run_metadata, (bytes, bytearray)):
        return bytes(run_metadata)
    if getattr(run_metadata, "partition_graphs", None) or getattr(run_metadata, "cost_graph", None):
        raise NotImplementedError("add_run_metadata: dtf serializes step_stats only, not "
                                  "partition_graphs or cost_graph")
    out = RunMetadataProto(step_stats=StepStatsProto())
    for dev in run_metadata.step_stats.dev_stats:
        d = out.step_stats.dev_stats.add(device=dev.device)
        for n in dev.node_stats:
            d.node_stats.add(node_name=n.node_name, timeline_label=n.timeline_label,
                             **{k: int(getattr(n, k)) for k in _TIMES})
    return out.SerializeToString()
