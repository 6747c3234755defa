"""unique, unique_with_counts, sort and argsort."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run


def test_unique_keeps_first_occurrence_order():
    x = tf.constant([3, 1, 3, 2, 1, 7])
    y, idx = tf.unique(x)
    assert y.shape.as_list() == [None] and idx.shape.as_list() == [6] and idx.dtype == tf.int32
    np.testing.assert_array_equal(run(y), [3, 1, 2, 7])
    np.testing.assert_array_equal(run(idx), [0, 1, 0, 2, 1, 3])
    y, idx, count = tf.unique_with_counts(tf.constant([2.5, -1.0, 2.5]), out_idx=tf.int64)
    assert idx.dtype == tf.int64
    got = run([y, idx, count])
    np.testing.assert_array_equal(got[0], [2.5, -1.0])
    np.testing.assert_array_equal(got[1], [0, 1, 0])
    np.testing.assert_array_equal(got[2], [2, 1])
    check_against_reference(y)
    with pytest.raises(ValueError, match="rank 1"):
        tf.unique(tf.constant([[1, 2]]))


def test_unique_has_no_gradient():
    x = tf.constant([1.0, 2.0, 1.0])
    assert tf.gradients(tf.reduce_sum(tf.unique(x).y), x) == [None]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_and_argsort_match_numpy(dtype, axis, direction):
    x = np.array([[3, 1, 2, 1], [0, 5, 255 if dtype == np.uint8 else -1, 5]], dtype)
    values = tf.sort(tf.constant(x), axis=axis, direction=direction)
    indices = tf.argsort(tf.constant(x), axis=axis, direction=direction, stable=True)
    assert values.shape.as_list() == [2, 4] and indices.dtype == tf.int32
    order = np.argsort(-x.astype(np.int64) if direction == "DESCENDING" else x, axis=axis, kind="stable")
    np.testing.assert_array_equal(run(indices), order)
    np.testing.assert_array_equal(run(values), np.take_along_axis(x, order, axis=axis))


def test_sort_errors():
    with pytest.raises(ValueError, match="direction"):
        tf.sort([1, 2], direction="UP")
    with pytest.raises(ValueError, match="constant scalar"):
        tf.sort([1, 2], axis=tf.placeholder(tf.int32, []))


@pytest.mark.parametrize("build", [
    lambda x: tf.sort(x) * np.arange(12.0).reshape(3, 4),
    lambda x: tf.sort(x, axis=0, direction="DESCENDING") * np.arange(12.0).reshape(3, 4),
])
def test_sort_gradient(build):
    check_gradient(build, [np.random.RandomState(5).randn(3, 4)])
