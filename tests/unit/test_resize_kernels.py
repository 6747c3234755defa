"""The resize ops' CPU kernels (dtf.kernels.cpu.image) against the numpy reference, which
they must reproduce exactly: ResizeBilinear, ResizeNearestNeighbor and their gradients, up
and down, odd sizes, one-pixel outputs, batch 1, TF1's legacy coordinates, align_corners
and half_pixel_centers, integer images, and batches cut into several chunks. Values
against TF: tests/goldens/cases_image.py."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import jit_loading
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(12)
FLAGS = [(False, False), (True, False), (False, True)]  # (align_corners, half_pixel_centers)
SIZES = [((2, 7, 9, 3), (14, 18)), ((1, 10, 6, 5), (4, 3)), ((3, 5, 5, 2), (1, 1)),
         ((2, 1, 8, 4), (3, 17)), ((40, 16, 16, 32), (32, 32))]  # the last: many chunks


@pytest.fixture(autouse=True, scope="module")
def loops():
    assert jit_loading.wait(120), "Numba's loops did not load"


def _kernel(op, attrs):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [attrs["T"]])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def _attrs(t, align, half):
    return {"T": t, "align_corners": align, "half_pixel_centers": half}


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("shape,size", SIZES)
def test_bilinear_and_its_gradient_are_the_reference(flags, shape, size):
    attrs = _attrs(tf.float32, *flags)
    x = RNG.standard_normal(shape).astype(np.float32)
    sz = np.array(size, np.int32)
    y = _kernel("ResizeBilinear", attrs)(None, x, sz)
    np.testing.assert_array_equal(y, REFERENCE["ResizeBilinear"](attrs, x, sz))
    g = RNG.standard_normal(y.shape).astype(np.float32)
    dx = _kernel("ResizeBilinearGrad", attrs)(None, g, x)
    np.testing.assert_array_equal(dx, REFERENCE["ResizeBilinearGrad"](attrs, g, x))


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("shape,size", SIZES)
def test_nearest_and_its_gradient_are_the_reference(flags, shape, size):
    attrs = _attrs(tf.float32, *flags)
    x = RNG.standard_normal(shape).astype(np.float32)
    sz = np.array(size, np.int32)
    y = _kernel("ResizeNearestNeighbor", attrs)(None, x, sz)
    np.testing.assert_array_equal(y, REFERENCE["ResizeNearestNeighbor"](attrs, x, sz))
    g = RNG.standard_normal(y.shape).astype(np.float32)
    back = np.array(shape[1:3], np.int32)
    dx = _kernel("ResizeNearestNeighborGrad", attrs)(None, g, back)
    np.testing.assert_array_equal(dx, REFERENCE["ResizeNearestNeighborGrad"](attrs, g, back))


@pytest.mark.parametrize("dtype,t", [(np.uint8, tf.uint8), (np.int32, tf.int32), (np.float64, tf.float64)])
def test_other_image_dtypes(dtype, t):
    attrs = _attrs(t, False, True)
    x = RNG.integers(0, 255, (2, 9, 7, 3)).astype(dtype)
    sz = np.array([5, 11], np.int32)
    y = _kernel("ResizeBilinear", attrs)(None, x, sz)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, REFERENCE["ResizeBilinear"](attrs, x, sz))
    yn = _kernel("ResizeNearestNeighbor", attrs)(None, x, sz)
    assert yn.dtype == dtype
    np.testing.assert_array_equal(yn, REFERENCE["ResizeNearestNeighbor"](attrs, x, sz))


def test_bad_arguments_raise_the_references_errors():
    attrs = _attrs(tf.float32, True, True)
    x = np.zeros((1, 4, 4, 1), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="half_pixel_centers"):
        _kernel("ResizeBilinear", attrs)(None, x, np.array([2, 2], np.int32))
    ok = _attrs(tf.float32, False, False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="4-dimensional"):
        _kernel("ResizeBilinear", ok)(None, x[0], np.array([2, 2], np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="positive"):
        _kernel("ResizeNearestNeighbor", ok)(None, x, np.array([0, 2], np.int32))


def test_a_resize_trains_end_to_end():
    xv = RNG.standard_normal((2, 6, 5, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    y = tf.image.resize_bilinear(x, [12, 9], half_pixel_centers=True)
    gx, = tf.gradients(tf.reduce_sum(y * y), [x])
    with tf.Session() as sess:
        got_y, got_gx = sess.run([y, gx], {x: xv})
    attrs = _attrs(tf.float32, False, True)
    want_y = REFERENCE["ResizeBilinear"](attrs, xv, np.array([12, 9]))
    np.testing.assert_allclose(got_y, want_y, rtol=1e-6)
    np.testing.assert_allclose(got_gx, REFERENCE["ResizeBilinearGrad"](attrs, 2 * want_y, xv),
                               rtol=1e-5, atol=1e-6)
