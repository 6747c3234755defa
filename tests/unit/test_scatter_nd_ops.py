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


def _batched(fn, b, *arrays):
    """numpy reference: fn applied per entry of the first b (batch) dimensions."""
    if b == 0:
        return fn(*arrays)
    return np.stack([_batched(fn, b - 1, *[a[i] for a in arrays]) for i in range(arrays[0].shape[0])])


Q = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)


@pytest.mark.parametrize("batch_dims,axis,indices", [
    (1, None, np.array([[2, 0, 2], [1, 1, 0]])),
    (1, 2, np.array([[3, 0], [1, 2]])),
    (2, 3, np.array([[[4], [0], [1]], [[2], [2], [3]]])),
    (-1, None, np.array([[1, 0], [2, 2]])),
])
def test_gather_with_batch_dims(batch_dims, axis, indices):
    out = tf.gather(tf.constant(Q), indices, axis=axis, batch_dims=batch_dims)
    b = batch_dims % indices.ndim
    a = (batch_dims if axis is None else axis) % Q.ndim
    want = _batched(lambda p, i: np.take(p, i, axis=a - b), b, Q, indices)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(out), want)


def test_gather_nd_with_batch_dims_and_errors():
    i = np.array([[[1, 2], [0, 3]], [[2, 0], [1, 1]]])
    out = tf.gather_nd(tf.constant(Q), i, batch_dims=1)
    assert out.shape.as_list() == [2, 2, 5]
    np.testing.assert_array_equal(run(out), _batched(lambda p, j: p[tuple(j.T)], 1, Q, i))
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not index"):
        run(tf.gather(tf.constant(Q), [[0, 3], [1, 1]], batch_dims=1))
    with pytest.raises(ValueError, match="batch_dims"):
        tf.gather(tf.constant(Q), [[0]], axis=0, batch_dims=1)


@pytest.mark.parametrize("build", [
    lambda p: tf.gather(p, [[2, 0, 2], [1, 1, 0]], batch_dims=1) ** 2,
    lambda p: tf.gather(p, [[3, 0], [1, 3]], axis=2, batch_dims=1) ** 2,
    lambda p: tf.gather_nd(p, [[[1, 2]], [[0, 3]]], batch_dims=1) ** 2,
])
def test_batch_gather_gradients(build):
    check_gradient(build, [np.random.RandomState(2).randn(2, 3, 4)])


def test_int64_indices():
    i64 = tf.constant([[1], [0]], tf.int64)
    s = tf.scatter_nd(i64, tf.constant([1.0, 2.0]), [3])
    assert s.op.inputs[2].dtype == tf.int64
    np.testing.assert_array_equal(run(s), [2.0, 1.0, 0.0])
    p = tf.constant(P)
    g = tf.gather_nd(p, tf.constant([[1, 2]], tf.int64))
    np.testing.assert_array_equal(run(tf.gradients(tf.reduce_sum(g), p)[0])[1, 2], np.ones(4))
    seg = tf.segment_sum(p, tf.constant([0, 0], tf.int64))
    useg = tf.unsorted_segment_max(p, tf.constant([1, 0], tf.int64), tf.constant(2, tf.int64))
    np.testing.assert_array_equal(run(seg), [P[0] + P[1]])
    np.testing.assert_array_equal(run(useg), [P[1], P[0]])
    with pytest.raises(TypeError, match="'shape'"):
        tf.scatter_nd(i64, tf.constant([1.0, 2.0]), tf.constant([3]))
