"""CPU kernel of UnsortedSegmentSum (the gradient of a gather along an inner axis builds
one): a Numba loop over the rows in order (.dense_jit) instead of the reference's
np.add.at, with the same sums. 4096 rows of 256 float32 into 100 segments: 7.7 ms in
np.add.at, TensorFlow 1.5."""
from __future__ import annotations

import math

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference.array import check_segment_ids
from dtf.kernels.registry import register_kernel
from .jit_loading import tiered_kernel


@register_kernel("UnsortedSegmentSum", "CPU",
                 dtypes=(dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64), label="numba")
@tiered_kernel
def unsorted_segment_sum(node):
    from . import dense_jit

    def compute(ctx, data, segment_ids, num_segments):
        n, flat_ids = check_segment_ids(data, segment_ids, num_segments)
        inner = data.shape[np.ndim(segment_ids):]
        out = np.zeros((n, math.prod(inner)), dtype=data.dtype)
        if out.size and flat_ids.size:
            rows = np.ascontiguousarray(data).reshape(flat_ids.size, -1)
            dense_jit._segment_sum_rows(rows, flat_ids.astype(np.int64, copy=False), out)
        return out.reshape((n,) + inner)

    return compute
