"""ConfigProto, RunOptions and RunMetadata: TF's common fields as plain Python objects."""
from __future__ import annotations


class _Message:
    """Keyword-initialised record with TF-proto-like helpers (CopyFrom, MergeFrom)."""

    _fields: dict = {}

    def __init__(self, **kwargs):
        for k, default in self._fields.items():
            setattr(self, k, default() if callable(default) else default)
        for k, v in kwargs.items():
            if k not in self._fields:
                raise ValueError(f'{type(self).__name__} has no field named "{k}"')
            setattr(self, k, v)

    def CopyFrom(self, other):  # noqa: N802 - proto API
        for k in self._fields:
            setattr(self, k, getattr(other, k))

    def MergeFrom(self, other):  # noqa: N802
        for k, default in self._fields.items():
            v = getattr(other, k)
            if v != (default() if callable(default) else default):
                setattr(self, k, v)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({items})"


class GPUOptions(_Message):
    _fields = {"allow_growth": False, "per_process_gpu_memory_fraction": 0.0,
               "visible_device_list": ""}


class GraphOptions(_Message):
    _fields = {"build_cost_model": 0, "infer_shapes": False, "place_pruned_graph": False,
               "enable_bfloat16_sendrecv": False}


class ConfigProto(_Message):
    """Session configuration. Of the threading fields, as in TF1:

    ``inter_op_parallelism_threads``: how many threads may run independent ops of one step
    at once, the calling thread included; 0 (the default) means one per core this process
    may use, negative means the calling thread only. Python threads only help kernels that
    release the GIL, so a step goes parallel only after its first runs measured at least two
    independent ops of 1 ms or more and a parallel run beat a sequential one; cheap ops
    always run on the calling thread, as with 1.

    ``intra_op_parallelism_threads``: accepted; kernels use the process's own settings
    (``NUMBA_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``), which is what 0 (the system picks)
    means in TF.
    """

    _fields = {
        "device_count": dict,
        "intra_op_parallelism_threads": 0,
        "inter_op_parallelism_threads": 0,
        "use_per_session_threads": False,
        "allow_soft_placement": False,
        "log_device_placement": False,
        "operation_timeout_in_ms": 0,
        "device_filters": list,
        "gpu_options": GPUOptions,
        "graph_options": GraphOptions,
        "isolate_session_state": False,
    }


class RunOptions(_Message):
    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3
    _fields = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "report_tensor_allocations_upon_oom": False}


class AllocatorMemoryUsed(_Message):
    _fields = {"allocator_name": "", "total_bytes": 0, "peak_bytes": 0, "live_bytes": 0,
               "allocator_bytes_in_use": 0}


class TensorShapeDim(_Message):
    _fields = {"size": 0, "name": ""}


class TensorShape(_Message):
    _fields = {"dim": list, "unknown_rank": False}


class AllocationDescription(_Message):
    _fields = {"requested_bytes": 0, "allocated_bytes": 0, "allocator_name": ""}


class TensorDescription(_Message):
    _fields = {"dtype": 0, "shape": TensorShape, "allocation_description": AllocationDescription}


class NodeOutput(_Message):
    _fields = {"slot": 0, "tensor_description": TensorDescription}


class NodeExecStats(_Message):
    """A node's run in a traced step. ``output`` and ``memory`` describe its outputs (the
    bytes of each, and their sum as the node's allocation: what TensorBoard's graph shows
    as its memory); ``output_shapes`` is dtf's shorthand for their shapes."""
    _fields = {"node_name": "", "all_start_micros": 0, "op_start_rel_micros": 0,
               "op_end_rel_micros": 0, "all_end_rel_micros": 0, "timeline_label": "",
               "memory": list, "output": list, "output_shapes": list}


def describe_outputs(shapes, dtype_names, allocator="cpu"):
    """(output, memory) of NodeExecStats for outputs of ``shapes`` and dtypes (names;
    strings and resources have no fixed size and count no bytes)."""
    from dtf.framework import dtypes
    from dtf.framework.graph_pb import datatype_enum

    outputs, total = [], 0
    for slot, (shape, name) in enumerate(zip(shapes, dtype_names or ())):
        try:
            dtype = dtypes.as_dtype(name).base_dtype
            enum = datatype_enum(dtype)
        except TypeError:  # a variable's handle: no tensor of its own
            continue
        except ValueError:  # a type of dtf's own (a loop's records for its gradient), not TF's
            continue
        n = 1
        for d in shape:
            n *= int(d)
        size = n * dtype.size
        total += size
        outputs.append(NodeOutput(slot=slot, tensor_description=TensorDescription(
            dtype=enum, shape=TensorShape(dim=[TensorShapeDim(size=int(d)) for d in shape]),
            allocation_description=AllocationDescription(requested_bytes=size, allocated_bytes=size,
                                                         allocator_name=allocator))))
    memory = [AllocatorMemoryUsed(allocator_name=allocator, total_bytes=total, peak_bytes=total)] \
        if outputs else []
    return outputs, memory


class DeviceStepStats(_Message):
    _fields = {"device": "", "node_stats": list}


class StepStats(_Message):
    _fields = {"dev_stats": list}


class RunMetadata(_Message):
    _fields = {"step_stats": StepStats, "partition_graphs": list, "cost_graph": None}
