"""Session.run's short way for feeds it has seen: the same conversions and checks as the
first time (no processes)."""
import numpy as np
import pytest

import dtf as tf


def test_a_seen_feed_is_still_cast_and_shape_checked():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        y = x * 2.0
        with tf.Session() as sess:
            ones = np.ones((1, 2), np.float32)
            assert sess.run(y, {x: ones}).tolist() == [[2.0, 2.0]]
            assert sess.run(y, {x: ones}).tolist() == [[2.0, 2.0]]  # the short way
            out = sess.run(y, {x: np.full((1, 2), 1.5)})  # float64: cast as TF casts
            assert out.dtype == np.float32 and out.tolist() == [[3.0, 3.0]]
            assert sess.run(y, {"x:0": [[1, 2]]}).tolist() == [[2.0, 4.0]]
            with pytest.raises(ValueError, match=r"shape \(1, 3\)"):
                sess.run(y, {x: np.ones((1, 3), np.float32)})
            x.set_shape([3, 2])  # a seen key checks against the shape as it is now
            with pytest.raises(ValueError, match=r"Cannot feed value of shape \(1, 2\)"):
                sess.run(y, {x: ones})
            assert sess.run(y, {x: np.ones((3, 2), np.float32)}).shape == (3, 2)


def test_a_feed_of_a_tensor_value_is_refused_even_after_arrays():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.Session() as sess:
            sess.run(x, {x: np.ones(2, np.float32)})
            with pytest.raises(TypeError, match="cannot be a tf.Tensor"):
                sess.run(x, {x: tf.constant([1.0, 2.0])})
