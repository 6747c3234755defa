"""Diagonal and band ops, eye, trace, linspace, meshgrid and reverse_sequence."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

M = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def test_diag_family_matches_numpy():
    d = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    full = tf.diag(d)
    assert full.shape.as_list() == [2, 2, 2, 2]
    want = np.diag(d.reshape(-1)).reshape(2, 2, 2, 2)
    np.testing.assert_array_equal(run(full), want)
    np.testing.assert_array_equal(run(tf.diag_part(want)), d)
    md = tf.matrix_diag(d)
    assert md.shape.as_list() == [2, 2, 2]
    np.testing.assert_array_equal(run(md), [np.diag(d[0]), np.diag(d[1])])
    part = tf.matrix_diag_part(M)
    assert part.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(part), np.diagonal(M, axis1=-2, axis2=-1))
    setd = tf.matrix_set_diag(M, -np.ones((2, 3), np.float32))
    want = M.copy()
    want[:, [0, 1, 2], [0, 1, 2]] = -1
    np.testing.assert_array_equal(run(setd), want)
    for t in (full, md, part, setd):
        check_against_reference(t)
    with pytest.raises(NotImplementedError, match="one diagonal"):
        tf.matrix_diag(d, k=(0, 1))
    with pytest.raises(ValueError, match="diagonal must have shape"):
        tf.matrix_set_diag(M, np.ones((2, 4), np.float32))


@pytest.mark.parametrize("lower,upper", [(0, 0), (1, -1), (-1, 0), (2, 1)])
def test_matrix_band_part(lower, upper):
    out = tf.matrix_band_part(M, lower, upper)
    rows, cols = np.arange(3)[:, None], np.arange(4)[None, :]
    keep = ((lower < 0) | (rows - cols <= lower)) & ((upper < 0) | (cols - rows <= upper))
    np.testing.assert_array_equal(run(out), M * keep)
    check_against_reference(out)


def test_eye_and_trace():
    np.testing.assert_array_equal(run(tf.eye(3)), np.eye(3))
    e = tf.eye(2, 4, batch_shape=[3], dtype=tf.int32)
    assert e.shape.as_list() == [3, 2, 4] and e.dtype == tf.int32
    np.testing.assert_array_equal(run(e), np.broadcast_to(np.eye(2, 4), (3, 2, 4)))
    n = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(run(tf.eye(n, 2), {n: 3}), np.eye(3, 2))
    np.testing.assert_array_equal(run(tf.trace(M)), np.trace(M, axis1=-2, axis2=-1))


def test_linspace_and_meshgrid():
    ls = tf.linspace(1.0, 2.0, 5)
    assert ls.shape.as_list() == [5] and tf.lin_space is tf.linspace
    np.testing.assert_allclose(run(ls), np.linspace(1, 2, 5))
    with pytest.raises(TypeError, match="start"):
        tf.linspace(1, 2, 3)
    x, y = np.arange(3), np.arange(4) * 10
    for indexing in ("xy", "ij"):
        got = run(tf.meshgrid(x, y, indexing=indexing))
        for g, w in zip(got, np.meshgrid(x, y, indexing=indexing)):
            np.testing.assert_array_equal(g, w)
    with pytest.raises(ValueError, match="indexing"):
        tf.meshgrid(x, y, indexing="yx")


def test_reverse_sequence():
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    out = tf.reverse_sequence(x, [3, 0], seq_axis=1, batch_axis=0)
    want = x.copy()
    want[0, :3] = x[0, 2::-1]
    np.testing.assert_array_equal(run(out), want)
    out_t = tf.reverse_sequence(x.transpose(1, 0, 2), [1, 4], seq_dim=0, batch_dim=1)
    want = x.copy()
    want[1] = x[1, ::-1]
    np.testing.assert_array_equal(run(out_t), want.transpose(1, 0, 2))
    check_against_reference(out_t)
    lengths = tf.placeholder(tf.int64, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="seq_lens"):
        run(tf.reverse_sequence(x, lengths, 1), {lengths: [5, 1]})


W = np.random.RandomState(0).randn(2, 3, 4)


@pytest.mark.parametrize("build", [
    lambda x: tf.diag(x[0, 0]) * np.arange(16.0).reshape(4, 4),
    lambda x: tf.diag_part(x[0, :, :3]) ** 2,
    lambda x: tf.matrix_diag(x) * np.arange(4.0),
    lambda x: tf.matrix_diag_part(x) ** 2,
    lambda x: tf.matrix_set_diag(x, x[:, :, 0] * 3.0) * W,
    lambda x: tf.matrix_band_part(x, 1, 0) * W,
    lambda x: tf.reverse_sequence(x, [2, 3], seq_axis=1) * W,
    lambda x: tf.trace(x) ** 2,
])
def test_gradients(build):
    check_gradient(build, [np.random.RandomState(2).randn(2, 3, 4)])


def test_roll():
    out = tf.roll(M, [1, -2], [0, 2])
    np.testing.assert_array_equal(run(out), np.roll(M, (1, -2), (0, 2)))
    np.testing.assert_array_equal(run(tf.roll(M, 2, 1)), np.roll(M, 2, 1))
    check_against_reference(out)
    check_gradient(lambda x: tf.roll(x, [1, 3], [1, -1]) * W, [np.random.RandomState(4).randn(2, 3, 4)])


def test_off_diagonals():
    d = np.array([1.0, 2.0])
    np.testing.assert_array_equal(run(tf.linalg.diag(d, k=1)), np.diag(d, 1))
    np.testing.assert_array_equal(run(tf.linalg.diag(d, k=-1)), np.diag(d, -1))
    np.testing.assert_array_equal(run(tf.linalg.diag(d, num_rows=3)), np.eye(3, 2) * [1, 2])
    got = run(tf.linalg.diag(d, num_rows=3, num_cols=4, k=-1, padding_value=9))
    np.testing.assert_array_equal(got, [[9, 9, 9, 9], [1, 9, 9, 9], [9, 2, 9, 9]])
    for k in (-2, -1, 1, 3):
        np.testing.assert_array_equal(run(tf.linalg.diag_part(M, k=k)), np.diagonal(M, k, -2, -1))
        n = np.diagonal(M, k, -2, -1).shape[-1]
        want = M.copy()
        rows, cols = (np.arange(n), np.arange(n) + k) if k > 0 else (np.arange(n) - k, np.arange(n))
        want[:, rows, cols] = -1.0
        np.testing.assert_array_equal(run(tf.linalg.set_diag(M, -np.ones((2, n), np.float32), k=k)), want)
    with pytest.raises(ValueError, match="needs at least"):
        tf.linalg.diag(d, k=1, num_rows=1)
    check_gradient(lambda x: tf.linalg.diag_part(x, k=1) ** 2 + tf.reduce_sum(
        tf.linalg.set_diag(x, x[:, :2, 0], k=-1) * W), [np.random.RandomState(5).randn(2, 3, 4)])
    check_gradient(lambda v: tf.linalg.diag(v, k=-1, num_cols=4, padding_value=2.0) ** 2, [d])
