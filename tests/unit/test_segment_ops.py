"""Segment reductions, dynamic_partition and dynamic_stitch: values against numpy, the
reference, shapes, errors and finite-difference gradients."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

DATA = np.array([[1.0, -2.0], [3.0, 4.0], [5.0, -6.0], [0.5, 8.0]], np.float32)


@pytest.mark.parametrize("fn,want", [
    (tf.segment_sum, [[4, 2], [0, 0], [5.5, 2]]),
    (tf.segment_mean, [[2, 1], [0, 0], [2.75, 1]]),
    (tf.segment_max, [[3, 4], [0, 0], [5, 8]]),
    (tf.segment_min, [[1, -2], [0, 0], [0.5, -6]]),
    (tf.segment_prod, [[3, -8], [1, 1], [2.5, -48]]),
])
def test_sorted_segments(fn, want):
    out = fn(tf.constant(DATA), [0, 0, 2, 2])
    assert out.shape.as_list() == [None, 2]
    np.testing.assert_allclose(run(out), want)
    check_against_reference(out)


@pytest.mark.parametrize("fn,want", [
    (tf.unsorted_segment_max, [[5, 8], [3, 4], [np.finfo(np.float32).min] * 2]),
    (tf.unsorted_segment_min, [[0.5, -6], [3, 4], [np.finfo(np.float32).max] * 2]),
    (tf.unsorted_segment_prod, [[2.5, -48], [3, 4], [1, 1]]),
    (tf.unsorted_segment_mean, [[2.75, 1], [3, 4], [0, 0]]),
    (tf.math.unsorted_segment_sqrt_n, [[5.5 / np.sqrt(2), 2 / np.sqrt(2)], [3, 4], [0, 0]]),
])
def test_unsorted_segments_drop_negative_ids(fn, want):
    out = fn(tf.constant(DATA), [-1, 1, 0, 0], 3)
    assert out.shape.as_list() == [3, 2]
    np.testing.assert_allclose(run(out), want, rtol=1e-6)
    if out.op.type.startswith("UnsortedSegment"):
        check_against_reference(out)


def test_segment_errors():
    ids = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="not increasing"):
        run(tf.segment_sum(tf.constant(DATA), ids), {ids: [0, 1, 0, 2]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        run(tf.unsorted_segment_max(tf.constant(DATA), ids, 2), {ids: [0, 1, 2, 0]})
    with pytest.raises(ValueError, match="rank 1"):
        tf.segment_sum(tf.constant(DATA), [[0], [0], [1], [1]])


def test_dynamic_partition_and_stitch():
    parts = tf.dynamic_partition(tf.constant(DATA), [1, 0, 1, 1], 3)
    assert len(parts) == 3 and parts[0].shape.as_list() == [None, 2]
    got = run(parts)
    np.testing.assert_array_equal(got[0], DATA[[1]])
    np.testing.assert_array_equal(got[1], DATA[[0, 2, 3]])
    assert got[2].shape == (0, 2)
    stitched = tf.dynamic_stitch([[3, 0], [[1], [2]], [0]], [DATA[:2], DATA[2:].reshape(2, 1, 2), [[9.0, 9.0]]])
    assert stitched.shape.as_list() == [4, 2]
    np.testing.assert_array_equal(run(stitched), [[9, 9], DATA[2], DATA[3], DATA[0]])
    check_against_reference(stitched)
    p = tf.placeholder(tf.int32, [4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"partitions\[2\] = 5 is not in \[0, 3\)"):
        run(tf.dynamic_partition(tf.constant(DATA), p, 3), {p: [0, 1, 5, 0]})


@pytest.mark.parametrize("build", [
    lambda x: tf.segment_sum(x, [0, 0, 1, 3]) * np.arange(8.).reshape(4, 2),
    lambda x: tf.segment_mean(x, [0, 0, 1, 3]) ** 2,
    lambda x: tf.segment_max(x, [0, 0, 1, 1]) * [[1.0, 2.0]],
    lambda x: tf.segment_min(x, [0, 1, 1, 1]) * [[1.0, 2.0]],
    lambda x: tf.segment_prod(x, [0, 0, 2, 2]) * [[1.0, 2.0]],
    lambda x: tf.unsorted_segment_sum(x, [1, -1, 0, 1], 2) ** 2,
    lambda x: tf.unsorted_segment_max(x, [1, -1, 0, 1], 2) * [[1.0, 2.0]],
    lambda x: tf.unsorted_segment_min(x, [1, 2, 0, 1], 3) * [[1.0, 2.0]],
    lambda x: tf.unsorted_segment_prod(x, [1, -1, 0, 1], 2) * [[1.0, 2.0]],
    lambda x: tf.unsorted_segment_mean(x, [1, 1, 0, 1], 2) ** 2,
    lambda x: tf.dynamic_partition(x, [1, 0, 1, 1], 2)[1] ** 2,
    lambda x: tf.dynamic_stitch([[1, 0], [3, 2]], [x[:2] * 3.0, x[2:] ** 2]),
])
def test_gradients(build):
    rng = np.random.RandomState(3)
    check_gradient(build, [rng.randn(4, 2)])


def test_prod_gradient_with_zeros():
    x = np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 0.0], [5.0, 7.0]])
    check_gradient(lambda t: tf.segment_prod(t, [0, 0, 1, 1]), [x])
    check_gradient(lambda t: tf.unsorted_segment_prod(t, [0, 0, 1, 1], 2), [x])


def test_integer_segment_mean_truncates_toward_zero():
    np.testing.assert_array_equal(run(tf.segment_mean(tf.constant([-3, -4, 5]), [0, 0, 1])), [-3, 5])
