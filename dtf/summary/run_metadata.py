"""RunMetadata as the protobuf TensorBoard reads (tensorflow/core/protobuf/config.proto and
framework/step_stats.proto): the per-device, per-node timings of a traced step, which
FileWriter.add_run_metadata stores in an event."""
from __future__ import annotations

from dtf.framework.protowire import Field, Message
from dtf.framework.protowire import fields as _fields
from dtf.framework.graph_pb import TensorShapeDim, TensorShapeProto


class AllocatorMemoryUsedProto(Message):
    FIELDS = _fields((1, "allocator_name", "string"), (2, "total_bytes", "int64"),
                     (3, "peak_bytes", "int64"), (4, "live_bytes", "int64"),
                     (5, "allocator_bytes_in_use", "int64"))


class AllocationDescriptionProto(Message):
    FIELDS = _fields((1, "requested_bytes", "int64"), (2, "allocated_bytes", "int64"),
                     (3, "allocator_name", "string"))


class TensorDescriptionProto(Message):
    FIELDS = _fields((1, "dtype", "enum"), (2, "shape", "message", TensorShapeProto),
                     (4, "allocation_description", "message", AllocationDescriptionProto))


class NodeOutputProto(Message):
    FIELDS = _fields((1, "slot", "int32"), (3, "tensor_description", "message", TensorDescriptionProto))


class NodeExecStatsProto(Message):
    FIELDS = _fields((1, "node_name", "string"), (2, "all_start_micros", "int64"),
                     (3, "op_start_rel_micros", "int64"), (4, "op_end_rel_micros", "int64"),
                     (5, "all_end_rel_micros", "int64"),
                     Field(6, "memory", "message", AllocatorMemoryUsedProto, repeated=True),
                     Field(7, "output", "message", NodeOutputProto, repeated=True),
                     (8, "timeline_label", "string"))


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
            ns = d.node_stats.add(node_name=n.node_name, timeline_label=n.timeline_label,
                                  **{k: int(getattr(n, k)) for k in _TIMES})
            for m in getattr(n, "memory", ()):  # what TensorBoard's graph shows as the node's memory
                ns.memory.add(allocator_name=m.allocator_name, total_bytes=int(m.total_bytes),
                              peak_bytes=int(m.peak_bytes), live_bytes=int(m.live_bytes),
                              allocator_bytes_in_use=int(m.allocator_bytes_in_use))
            for o in getattr(n, "output", ()):
                td = o.tensor_description
                desc = ns.output.add(slot=o.slot).tensor_description
                desc.dtype = td.dtype
                desc.shape = TensorShapeProto(dim=[TensorShapeDim(size=int(d.size)) for d in td.shape.dim])
                ad = td.allocation_description
                desc.allocation_description = AllocationDescriptionProto(
                    requested_bytes=int(ad.requested_bytes), allocated_bytes=int(ad.allocated_bytes),
                    allocator_name=ad.allocator_name)
    return out.SerializeToString()
