"""The ParallelDynamicStitch op: dynamic_stitch (dtf/ops/segment_ops.py) under the op type
TF's embedding_lookup builds, with the same shapes, kernel and gradient. TF1 has no public
name for it; embedding_lookup uses ``parallel_dynamic_stitch``."""
from __future__ import annotations

from dtf.framework.op_registry import RegisterGradient, get_gradient_function, register_op
from .segment_ops import _dynamic_stitch_infer, stitch

__all__ = []

register_op("ParallelDynamicStitch")(_dynamic_stitch_infer)
RegisterGradient("ParallelDynamicStitch")(get_gradient_function("DynamicStitch"))


def parallel_dynamic_stitch(indices, data, name=None):
    """result[indices[m][i]] = data[m][i] (as dynamic_stitch)."""
    return stitch("ParallelDynamicStitch", indices, data, name)
