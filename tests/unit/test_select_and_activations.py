"""Select/SelectV2's CPU kernel (a Numba blend over slices, dtf.kernels.cpu.elementwise)
against np.where, and the mask-free references of LeakyRelu, Elu, EluGrad and Softplus
against their definitions: NaN, infinities, signed zeros, alphas on both sides of 1,
integer dtypes, strided inputs, and the shapes that stay with the reference."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import elementwise, jit_loading
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(16)
SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-40, -1e-40, 88.0, -3.0, 2.0, -100.0,
                    0.5], np.float32)


def _kernel(op, t):
    node = NodeDef(f"test_{op}", op, [], [], "", {"T": t}, [t])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


@pytest.mark.parametrize("op", ["Select", "SelectV2"])
@pytest.mark.parametrize("dtype,t", [(np.float32, tf.float32), (np.float64, tf.float64),
                                     (np.int32, tf.int32), (np.uint8, tf.uint8)])
def test_select_is_np_where(op, dtype, t):
    assert jit_loading.wait(120), "Numba's loops did not load"
    n = 3 * elementwise.SLICE_ELEMENTS + 6  # several slices, a short last one
    x = (RNG.standard_normal(n) * 50).astype(dtype)
    y = (RNG.standard_normal(n) * 50).astype(dtype)
    c = RNG.random(n) > 0.5
    got = _kernel(op, t)(None, c, x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.where(c, x, y))
    strided = _kernel(op, t)(None, c[::2], x[::2], y[1::2])
    np.testing.assert_array_equal(strided, np.where(c[::2], x[::2], y[1::2]))


def test_select_keeps_nan_signed_zeros_and_the_references_shapes():
    x = np.tile(SPECIAL, 1000)
    y = -x
    c = np.tile(np.arange(12) % 3 == 0, 1000)
    got = _kernel("Select", tf.float32)(None, c, x, y)
    want = np.where(c, x, y)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want))
    rows = RNG.random(4000) > 0.5  # Select's row condition: the reference
    x2 = RNG.standard_normal((4000, 3)).astype(np.float32)
    np.testing.assert_array_equal(_kernel("Select", tf.float32)(None, rows, x2, -x2),
                                  np.where(rows[:, None], x2, -x2))
    with pytest.raises(ValueError, match="same shape"):
        _kernel("Select", tf.float32)(None, c, x, y[:-1])


@pytest.mark.parametrize("alpha", [0.2, 1.0, 1.5, -0.3])
def test_leaky_relu_is_its_definition(alpha):
    x = np.concatenate([SPECIAL, RNG.standard_normal(1000).astype(np.float32)])
    got = REFERENCE["LeakyRelu"]({"alpha": alpha}, x)
    want = np.where(x > 0, x, x * np.float32(alpha))
    np.testing.assert_array_equal(got, want)


def test_elu_its_gradient_and_softplus_are_their_definitions():
    x = np.concatenate([SPECIAL, (RNG.standard_normal(1000) * 5).astype(np.float32)])
    y = REFERENCE["Elu"]({}, x)
    want = np.where(x < 0, np.expm1(np.minimum(x, 0)), x)
    np.testing.assert_array_equal(y, want)
    assert np.array_equal(np.signbit(y), np.signbit(want))  # -0.0 stays -0.0
    g = RNG.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_array_equal(REFERENCE["EluGrad"]({}, g, y), np.where(y < 0, g * (y + 1), g))
    with np.errstate(invalid="ignore"):
        want_sp = np.logaddexp(np.float32(0), x)
    got_sp = REFERENCE["Softplus"]({}, x)
    assert got_sp.dtype == np.float32
    np.testing.assert_allclose(got_sp, want_sp, rtol=1e-6, atol=1e-44)


def test_scalars_and_broadcast_gradients():
    for x in (np.array(-2.0, np.float32), np.array(3.0, np.float32)):
        np.testing.assert_array_equal(REFERENCE["LeakyRelu"]({"alpha": 0.2}, x),
                                      np.where(x > 0, x, x * np.float32(0.2)))
        np.testing.assert_array_equal(REFERENCE["Elu"]({}, x), np.where(x < 0, np.expm1(x), x))
        np.testing.assert_allclose(REFERENCE["Softplus"]({}, x), np.logaddexp(np.float32(0), x),
                                   rtol=1e-6)
    g = RNG.standard_normal((4, 5)).astype(np.float32)
    y = np.array([-0.5, 0.1, 1.0, -0.9, 2.0], np.float32)
    np.testing.assert_array_equal(REFERENCE["EluGrad"]({}, g, y), np.where(y < 0, g * (y + 1), g))
