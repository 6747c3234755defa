"""bincount, setdiff1d, unravel_index, searchsorted, shape_n, identity_n, ensure_shape and
the broadcast-shape helpers."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run


def test_bincount():
    arr = np.array([1, 3, 3, 0, 7])
    np.testing.assert_array_equal(run(tf.bincount(arr)), np.bincount(arr))
    np.testing.assert_array_equal(run(tf.bincount(arr, minlength=10)), np.bincount(arr, minlength=10))
    np.testing.assert_array_equal(run(tf.bincount(arr, maxlength=4)), np.bincount(arr)[:4])
    w = np.array([0.5, 1.0, 2.0, 3.0, 4.0], np.float32)
    got = tf.bincount(arr, weights=w)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(run(got), np.bincount(arr, w))
    assert run(tf.bincount(np.zeros([0], np.int32))).shape == (0,)
    assert run(tf.bincount(arr, dtype=tf.int64)).dtype == np.int64


def test_setdiff1d_unravel_index_searchsorted():
    out, idx = tf.setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5])
    np.testing.assert_array_equal(run(out), [2, 4, 6])
    np.testing.assert_array_equal(run(idx), [1, 3, 5])
    u = tf.unravel_index([22, 41, 37], [7, 6])
    assert u.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(u), np.unravel_index([22, 41, 37], (7, 6)))
    check_against_reference(u)
    seq = np.array([[0.0, 3.0, 9.0, 9.0, 10.0], [1.0, 2.0, 3.0, 4.0, 5.0]])
    vals = np.array([[2.0, 4.0, 9.0], [0.0, 2.0, 6.0]])
    for side in ("left", "right"):
        got = tf.searchsorted(seq, vals, side=side)
        assert got.shape.as_list() == [2, 3] and got.dtype == tf.int32
        np.testing.assert_array_equal(run(got), [np.searchsorted(s, v, side) for s, v in zip(seq, vals)])
    np.testing.assert_array_equal(run(tf.searchsorted([1, 5, 9], [5, 10])), [1, 3])
    with pytest.raises(ValueError, match="side"):
        tf.searchsorted(seq, vals, side="middle")


def test_shapes_identities_and_ensure_shape():
    x = tf.placeholder(tf.float32, [None, 3])
    s1, s2 = tf.shape_n([x, tf.constant([[1, 2]])])
    a, b = tf.identity_n([x, tf.constant(1.0)])
    feed = {x: np.ones((2, 3), np.float32)}
    np.testing.assert_array_equal(run(s1, feed), [2, 3])
    np.testing.assert_array_equal(run(s2), [1, 2])
    np.testing.assert_array_equal(run(a, feed), np.ones((2, 3)))
    e = tf.ensure_shape(x, [2, None])
    assert e.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(e, feed), np.ones((2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not compatible with expected shape"):
        run(e, {x: np.ones((4, 3), np.float32)})
    with pytest.raises(ValueError, match="not compatible"):
        tf.ensure_shape(x, [2, 4])
    check_gradient(lambda t: tf.ensure_shape(t, [2, 3]) ** 2, [np.ones((2, 3))])
    assert tf.broadcast_static_shape(tf.TensorShape([None, 1, 3]), tf.TensorShape([4, 3])).as_list() == [None, 4, 3]
    np.testing.assert_array_equal(run(tf.broadcast_dynamic_shape([2, 1, 3], [4, 1])), [2, 4, 3])
    with pytest.raises(ValueError, match="Incompatible"):
        tf.broadcast_static_shape(tf.TensorShape([2]), tf.TensorShape([3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible"):
        run(tf.broadcast_dynamic_shape([2], [3]))


def test_histogram_fixed_width():
    values = np.array([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], np.float32)
    h = tf.histogram_fixed_width(values, [0.0, 5.0], nbins=5)
    assert h.shape.as_list() == [5] and h.dtype == tf.int32
    np.testing.assert_array_equal(run(h), [2, 1, 1, 0, 2])
    check_against_reference(h)
