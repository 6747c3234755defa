"""Softmax and LogSoftmax's CPU kernels (row blocks over the intra-op threads,
dtf.kernels.cpu.nn) against the numpy reference: several blocks with a short last one,
rows wider and narrower than a block, N-D inputs (softmax over the last axis), strided
inputs, NaN and infinities, float64, and small inputs on the reference itself. With oneDNN
off: its softmax is tests/unit/test_softmax_onednn.py's."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import nn, onednn
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(8)


@pytest.fixture(autouse=True)
def numpy_blocks(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", False)


def _kernel(op, dtype):
    node = NodeDef(f"test_{op}", op, [], [], "", {"T": dtype}, [dtype])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("shape", [(32, 32, 32, 64), (700, 10_000), (3, 40_000), (50_001, 1),
                                   (4099, 17), (8, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_blocks_match_the_reference(op, shape, dtype):
    x = (RNG.standard_normal(shape) * 4).astype(dtype)
    t = tf.float32 if dtype == np.float32 else tf.float64
    got = _kernel(op, t)(None, x)
    want = REFERENCE[op]({"T": t}, x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # the same numpy passes, row by row


def test_strided_inputs_nan_and_infinities():
    x = RNG.standard_normal((600, 130)).astype(np.float32)
    x[3, 5], x[10, 0], x[11, :] = np.nan, np.inf, -np.inf
    view = x[:, ::2]  # not contiguous
    for op in ("Softmax", "LogSoftmax"):
        with np.errstate(invalid="ignore"):
            got = _kernel(op, tf.float32)(None, view)
            want = REFERENCE[op]({"T": tf.float32}, view)
        np.testing.assert_array_equal(got, want)
    assert view.size >= nn.WIDE_MIN_ELEMENTS  # the blocks ran, not the reference
