"""tf.layers on a cluster: variables on the ps by replica_device_setter, the new conv,
depthwise and 3-D ops run on the worker, batch norm's UPDATE_OPS update the moving
statistics on the ps, and training gives the numbers an in-process session gives."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster


def _model(cluster=None):
    rng = np.random.RandomState(0)

    def init(*shape):
        return tf.constant_initializer(rng.randn(*shape).astype(np.float32) * 0.3)

    setter = tf.train.replica_device_setter(cluster=cluster) if cluster else None
    with tf.device(setter):
        x = tf.placeholder(tf.float32, [None, 6, 6, 2])
        labels = tf.placeholder(tf.float32, [None, 3])
        h = tf.layers.separable_conv2d(x, 4, 3, padding="same", depth_multiplier=2,
                                       depthwise_initializer=init(3, 3, 2, 2),
                                       pointwise_initializer=init(1, 1, 4, 4))
        h = tf.nn.relu(tf.layers.batch_normalization(h, training=True))
        h = tf.layers.max_pooling2d(h, 2, 2)
        v = tf.layers.conv3d(tf.reshape(h, [-1, 3, 3, 4, 1]), 2, 2, padding="same",
                             kernel_initializer=init(2, 2, 2, 1, 2))
        logits = tf.layers.dense(tf.layers.flatten(v), 3, kernel_initializer=init(72, 3))
        loss = tf.reduce_mean(tf.square(logits - labels))
        step = tf.train.get_or_create_global_step()
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    feed_rng = np.random.RandomState(1)
    feeds = {x: feed_rng.randn(8, 6, 6, 2).astype(np.float32),
             labels: feed_rng.randn(8, 3).astype(np.float32)}
    return loss, train, feeds


def _train(target, cluster=None):
    tf.reset_default_graph()
    loss, train, feeds = _model(cluster)
    moving = [v for v in tf.global_variables() if "moving_mean" in v.name][0]
    with tf.Session(target) as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([loss, train], feeds)[0] for _ in range(5)]
        return losses, sess.run(moving), moving.device


def test_layers_train_on_a_ps_and_worker_as_in_process(make_cluster):
    cl = make_cluster(ps=1, worker=1).start_all()
    remote, remote_moving, device = _train(cl.target("worker", 0), cl.cluster_spec())
    local, local_moving, _ = _train("")
    assert device == "/job:ps/task:0"
    assert remote[-1] < remote[0]
    # To float rounding: the parallel schedule of the in-process steps keeps the sequential
    # order between a variable's reads and its updates (dtf.runtime.parallel), so which
    # thread came first, or when a process's Numba loops loaded, changes no loss.
    np.testing.assert_allclose(remote, local, rtol=1e-5)
    np.testing.assert_allclose(remote_moving, local_moving, rtol=1e-5)
    assert np.all(remote_moving != 0)
