"""space_to_depth / depth_to_space and space_to_batch(_nd) / batch_to_space(_nd): round
trips, TF's layout, static shapes, errors and gradients."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient, run

X = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)


def test_space_to_depth_layout_and_round_trip():
    s = tf.space_to_depth(X, 2)
    assert s.shape.as_list() == [2, 2, 3, 12]
    got = run(s)
    # output depth index = (row offset * 2 + column offset) * C + c
    np.testing.assert_array_equal(got[1, 1, 2, (1 * 2 + 0) * 3 + 2], X[1, 3, 4, 2])
    np.testing.assert_array_equal(run(tf.depth_to_space(s, 2)), X)
    nchw = tf.space_to_depth(X.transpose(0, 3, 1, 2), 2, data_format="NCHW")
    np.testing.assert_array_equal(run(nchw), got.transpose(0, 3, 1, 2))
    with pytest.raises(ValueError, match="not divisible"):
        tf.space_to_depth(X, 4)
    with pytest.raises(ValueError, match="> 1"):
        tf.nn.depth_to_space(X, 1)


@pytest.mark.parametrize("block,paddings", [([2, 3], [[0, 0], [0, 0]]), ([2, 2], [[1, 1], [0, 2]]),
                                            ([3], [[1, 1]])])
def test_space_to_batch_nd_round_trip(block, paddings):
    sb = tf.space_to_batch_nd(X, block, paddings)
    padded = np.pad(X, [[0, 0]] + paddings + [[0, 0]] * (3 - len(block)))
    assert sb.shape.as_list()[0] == 2 * int(np.prod(block))
    got = run(sb)
    # batch entry k * 2 + b holds, for block offset k (row-major over the block), the samples
    # of entry b at that offset: here the last offset of entry 1
    last = [b - 1 for b in block]
    picked = padded[(1,) + tuple(slice(o, None, b) for o, b in zip(last, block))]
    np.testing.assert_array_equal(got[(int(np.prod(block)) - 1) * 2 + 1], picked)
    back = tf.batch_to_space_nd(sb, block, paddings)
    assert back.shape.as_list() == list(X.shape)
    np.testing.assert_array_equal(run(back), X)


def test_space_to_batch_4d_and_dynamic_shapes():
    x = tf.placeholder(tf.float32, [None, 4, None, 3])
    sb = tf.space_to_batch(x, [[0, 0], [1, 1]], block_size=2)
    back = tf.batch_to_space(sb, tf.constant([[0, 0], [1, 1]]), 2)
    np.testing.assert_array_equal(run(back, {x: X}), X)
    with pytest.raises(NotImplementedError, match="block size"):
        tf.space_to_batch_nd(X, tf.placeholder(tf.int32, [2]), [[0, 0], [0, 0]])


@pytest.mark.parametrize("build", [
    lambda x: tf.space_to_depth(x, 2) * np.arange(48.0).reshape(1, 2, 2, 12),
    lambda x: tf.depth_to_space(tf.tile(x, [1, 1, 1, 4]), 2) ** 2,
    lambda x: tf.space_to_batch_nd(x, [2, 2], [[1, 1], [0, 0]]) ** 2,
    lambda x: tf.batch_to_space_nd(tf.tile(x, [4, 1, 1, 1]), [2, 2], [[1, 0], [0, 1]]) ** 2,
])
def test_gradients(build):
    check_gradient(build, [np.random.RandomState(0).randn(1, 4, 4, 3)])
