"""Embedding training inside a GPU partition: the gather's IndexedSlices gradient reaches a
sparse optimizer update and a scatter op, which write the variable's host array, with no soft
placement; the result is the CPU's, and only the looked-up rows change."""
import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.gpu

TABLE = np.arange(24, dtype=np.float32).reshape(6, 4) / 10.0


def train_once(device, optimizer):
    tf.reset_default_graph()
    with tf.device(device):
        table = tf.Variable(TABLE, name="table")
        rows = tf.nn.embedding_lookup(table, [1, 4, 1])
        train = optimizer().minimize(tf.reduce_sum(rows * rows))
        bump = tf.scatter_add(table, [5], tf.ones([1, 4]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(bump)
        return sess.run(table)


@pytest.mark.parametrize("optimizer", [
    lambda: tf.train.AdagradOptimizer(0.1), lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    lambda: tf.train.GradientDescentOptimizer(0.1)], ids=["adagrad", "momentum", "sgd"])
def test_sparse_updates_inside_a_gpu_partition(optimizer):
    got = train_once("/gpu:0", optimizer)
    np.testing.assert_allclose(got, train_once("/cpu:0", optimizer), rtol=1e-6)
    assert sorted(set(np.nonzero(np.any(got != TABLE, axis=1))[0])) == [1, 4, 5]
    np.testing.assert_array_equal(got[5], TABLE[5] + 1.0)
