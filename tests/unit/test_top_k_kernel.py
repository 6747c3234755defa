"""TopKV2's CPU kernel (insertion per row, dtf.kernels.cpu.nn) against the numpy
reference's stable sort: values and indices exactly, with ties (larger first, equal
values by lower index), NaN (first), infinities and signed zeros, k of 1 and of the whole
row, N-D inputs, integer dtypes, rows over several chunks, and what the reference keeps
(k = 0, k above the insertion limit, its errors)."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import jit_loading, nn
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(14)


def _kernel(t):
    node = NodeDef("test_topk", "TopKV2", [], [], "", {"T": t, "sorted": True}, [t, tf.int32])
    return registry.lookup("TopKV2", "CPU", node.dtype_key).factory(node)


def _same(x, k, t):
    got = _kernel(t)(None, x, np.int32(k))
    want = REFERENCE["TopKV2"]({"T": t}, x, np.int32(k))
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("shape,k", [((256, 1000), 5), ((3, 7), 1), ((3, 7), 7), ((2, 3, 50), 10),
                                     ((5000, 64), 64), ((1, 1), 1)])
@pytest.mark.parametrize("dtype,t", [(np.float32, tf.float32), (np.float64, tf.float64),
                                     (np.int32, tf.int32), (np.int64, tf.int64)])
def test_random_rows_with_ties(shape, k, dtype, t):
    assert jit_loading.wait(120), "Numba's loops did not load"
    x = RNG.integers(-5, 5, shape).astype(dtype)  # many ties
    _same(x, k, t)
    if dtype in (np.float32, np.float64):
        _same(RNG.standard_normal(shape).astype(dtype), k, t)


def test_nan_infinities_and_signed_zeros():
    x = np.array([[1.0, np.nan, -np.inf, 0.0, -0.0, np.inf, np.nan, 3.0],
                  [-0.0, 0.0, -0.0, 0.0, np.nan, -1.0, -np.inf, -np.inf]], np.float32)
    for k in range(1, 9):
        _same(x, k, tf.float32)


def test_what_stays_with_the_reference():
    x = RNG.standard_normal((4, 100)).astype(np.float32)
    _same(x, 0, tf.float32)
    _same(x, nn.TOP_K_INSERTION_MAX + 1, tf.float32)
    with pytest.raises(ValueError, match="at least k=101"):
        _kernel(tf.float32)(None, x, np.int32(101))
