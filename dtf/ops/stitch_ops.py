"""The ParallelDynamicStitch op: dynamic_stitch (dtf/ops/segment_ops.py) under the op type
TF's embedding_lookup builds, with the same shapes, kernel and gradient. TF1 has no public
name for it; embedding_lookup uses ``parallel_dynamic_stitch``."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, get_gradient_function, register_op
from .common import convert
from .segment_ops import _dynamic_stitch_infer

__all__ = []

register_op("ParallelDynamicStitch")(_dynamic_stitch_infer)
RegisterGradient("ParallelDynamicStitch")(get_gradient_function("DynamicStitch"))


def parallel_dynamic_stitch(indices, data, name=None):
    """result[indices[m][i]] = data[m][i] (as dynamic_stitch)."""
    indices, data = list(indices), list(data)
    if len(indices) != len(data) or not indices:
        raise ValueError(f"parallel_dynamic_stitch needs as many data tensors as index tensors "
                         f"(at least one); got {len(indices)} and {len(data)}")
    with _ops.name_scope(name, "ParallelDynamicStitch", indices + data) as scope:
        indices = [convert(i, f"indices_{k}", dtype=dtypes.int32) for k, i in enumerate(indices)]
        data = [convert(d, f"data_{k}") for k, d in enumerate(data)]
        data = [convert(d, dtype=data[0].dtype) for d in data]
        return _ops.make_tensor("ParallelDynamicStitch", indices + data,
                                {"T": data[0].dtype, "N": len(data)}, name=scope)
