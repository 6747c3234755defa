"""AvgPool's and AvgPoolGrad's Numba kernels (dtf.kernels.cpu.nn) against the numpy
reference: odd sizes, strides 1 and 2, SAME and VALID, windows larger than the stride and
than the input, batch 1, float32 and float64, and work cut into several chunks for the
intra-op threads."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import jit_loading, nn
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(4)


def _kernel(attrs, op="AvgPoolGrad"):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [attrs["T"]])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


CASES = pytest.mark.parametrize("shape,k,s,padding", [
    ((2, 7, 9, 5), (3, 3), (2, 2), "SAME"),
    ((1, 6, 6, 3), (2, 2), (2, 2), "VALID"),
    ((3, 5, 8, 4), (3, 2), (1, 2), "SAME"),
    ((2, 4, 4, 2), (5, 5), (1, 1), "SAME"),  # windows wider than the image
    ((40, 33, 40, 13), (3, 3), (2, 2), "SAME"),  # several chunks
])


def _loaded_attrs(k, s, padding, dtype):
    assert jit_loading.wait(120), "Numba's loops did not load"
    return {"T": tf.float32 if dtype == np.float32 else tf.float64, "ksize": [1, *k, 1],
            "strides": [1, *s, 1], "padding": padding, "data_format": "NHWC"}


def _check(got, want, dtype):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@CASES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_forward_kernel_matches_the_reference(shape, k, s, padding, dtype):
    attrs = _loaded_attrs(k, s, padding, dtype)
    x = RNG.standard_normal(shape).astype(dtype)
    got = _kernel(attrs, "AvgPool")(None, x[:, ::-1])  # a strided input, too
    _check(got, REFERENCE["AvgPool"](attrs, np.ascontiguousarray(x[:, ::-1])), dtype)


@CASES
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_kernel_matches_the_reference(shape, k, s, padding, dtype):
    attrs = _loaded_attrs(k, s, padding, dtype)
    x = RNG.standard_normal(shape).astype(dtype)
    y = REFERENCE["AvgPool"](attrs, x)
    dy = RNG.standard_normal(y.shape).astype(dtype)
    sizes = np.array(shape, np.int32)
    _check(_kernel(attrs)(None, sizes, dy), REFERENCE["AvgPoolGrad"](attrs, sizes, dy), dtype)
    if shape[0] == 40:  # the case meant to run in chunks does
        per_chunk = max(1, nn.POOL_GRAD_CHUNK_ELEMENTS // int(np.prod(shape[1:])))
        assert shape[0] > 2 * per_chunk
