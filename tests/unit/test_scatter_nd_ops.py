"""gather_nd, scatter_nd and tensor_scatter_*: values against numpy, the reference, shape
inference, errors and finite-difference gradients."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

P = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("indices,want", [
    ([[0, 1, 2], [1, 2, 3]], P[[0, 1], [1, 2], [2, 3]]),
    ([[1, 0], [0, 2]], P[[1, 0], [0, 2]]),
    ([[[1]], [[0]]], P[np.array([[1], [0]])]),
    (np.zeros((2, 0), np.int64), np.stack([P, P])),
])
def test_gather_nd(indices, want):
    out = tf.gather_nd(tf.constant(P), indices)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(out), want)
    check_against_reference(out)


def test_scatter_nd_sums_duplicates_and_tensor_scatters():
    s = tf.scatter_nd([[1, 0], [1, 0], [0, 2]], tf.constant([1.0, 2.0, 5.0]), [2, 3])
    assert s.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(s), [[0, 0, 5], [3, 0, 0]])
    t = tf.constant(np.ones((3, 2), np.float32))
    upd, add, sub = (f(t, [[2], [0]], [[7.0, 8.0], [1.0, 2.0]]) for f in
                     (tf.tensor_scatter_update, tf.tensor_scatter_add, tf.tensor_scatter_nd_sub))
    np.testing.assert_array_equal(run(upd), [[1, 2], [1, 1], [7, 8]])
    np.testing.assert_array_equal(run(add), [[2, 3], [1, 1], [8, 9]])
    np.testing.assert_array_equal(run(sub), [[0, -1], [1, 1], [-6, -7]])
    for x in (s, upd, add, sub):
        check_against_reference(x)


def test_shape_and_runtime_errors():
    with pytest.raises(ValueError, match="params.rank"):
        tf.gather_nd(tf.constant(P), [[0, 0, 0, 0]])
    with pytest.raises(ValueError, match="updates has shape"):
        tf.scatter_nd([[0], [1]], tf.constant([1.0, 2.0, 3.0]), [4])
    i = tf.placeholder(tf.int32, [None, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[0, 3\] does not index"):
        run(tf.gather_nd(tf.constant(P), i), {i: [[0, 0], [0, 3]]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not index into output shape"):
        run(tf.scatter_nd(i, tf.constant([1.0, 2.0]), [2, 2]), {i: [[0, 0], [2, 0]]})


@pytest.mark.parametrize("build", [
    lambda p: tf.gather_nd(p, [[0, 1], [1, 2], [0, 1]]) ** 2,
    lambda u: tf.scatter_nd([[1], [3], [1]], u[:3], [5, 4]) * np.arange(20.).reshape(5, 4),
    lambda t: tf.tensor_scatter_update(t, [[1]], t[:1] * 3.0) ** 2,
    lambda t: tf.tensor_scatter_add(t, [[1], [0]], t[1:] * t[1:]) * 2.0,
    lambda t: tf.tensor_scatter_sub(t ** 2, [[0, 1]], t[0, :1] * 5.0),
])
def test_gradients(build):
    rng = np.random.RandomState(1)
    check_gradient(build, [rng.randn(3, 4)])
