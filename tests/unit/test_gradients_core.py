import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient


def test_broadcasting_binary_gradients():
    rng = np.random.default_rng(0)
    check_gradient(lambda x, b: tf.sigmoid(x * b) + x / b - b,
                   [rng.normal(size=(2, 3)), rng.uniform(1, 2, size=(3,))])


def test_unconnected_is_none_and_paths_sum():
    x = tf.placeholder(tf.float32, [])
    z = tf.placeholder(tf.float32, [])
    y = x * x + 3.0 * x
    gx, gz = tf.gradients(y, [x, z])
    assert gz is None
    with tf.Session() as s:
        assert s.run(gx, {x: 2.0}) == pytest.approx(7.0)


def test_grad_ys():
    x = tf.placeholder(tf.float32, [2])
    y = 2.0 * x
    g, = tf.gradients(y, [x], grad_ys=[tf.constant([1.0, 10.0])])
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(g, {x: [1, 1]}), [2, 20])


@pytest.mark.parametrize("reducer", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"])
@pytest.mark.parametrize("axis,keep", [(None, False), (0, False), (1, True), ([0, 1], False)])
def test_reduction_gradients(reducer, axis, keep):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, size=(3, 4))
    check_gradient(lambda t: getattr(tf, reducer)(t, axis=axis, keepdims=keep) * 1.5, [x])
