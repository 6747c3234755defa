"""UnsortedSegmentSum's CPU kernel (dtf.kernels.cpu.segment) against the numpy reference:
the same sums (rows added in order), negative ids dropped, empty segments, N-D ids and
inner shapes, integer data, empty inputs, and TF's error for an id out of range."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import jit_loading
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(13)


def _kernel(t):
    node = NodeDef("test_seg", "UnsortedSegmentSum", [], [], "", {"T": t}, [t])
    return registry.lookup("UnsortedSegmentSum", "CPU", node.dtype_key).factory(node)


@pytest.mark.parametrize("data_shape,ids_shape,n", [
    ((4096, 256), (4096,), 100), ((7, 3, 5), (7,), 10), ((6, 4, 2, 3), (6, 4), 5),
    ((0, 3), (0,), 4), ((5,), (5,), 3), ((9, 2), (9,), 0)])
@pytest.mark.parametrize("dtype,t", [(np.float32, tf.float32), (np.float64, tf.float64),
                                     (np.int32, tf.int32), (np.int64, tf.int64)])
def test_the_kernel_is_the_reference(data_shape, ids_shape, n, dtype, t):
    assert jit_loading.wait(120), "Numba's loops did not load"
    data = (RNG.standard_normal(data_shape) * 10).astype(dtype)
    ids = RNG.integers(-2, n, ids_shape) if n else np.full(ids_shape, -1)  # negatives: dropped
    got = _kernel(t)(None, data, ids, np.int32(n))
    want = REFERENCE["UnsortedSegmentSum"]({"T": t}, data, ids, np.int32(n))
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_an_id_out_of_range_is_tfs_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        _kernel(tf.float32)(None, np.ones((3, 2), np.float32), np.array([0, 5, 1]), np.int32(3))
    with pytest.raises(ValueError, match="does not start with"):
        _kernel(tf.float32)(None, np.ones((3, 2), np.float32), np.array([0, 1]), np.int32(3))
