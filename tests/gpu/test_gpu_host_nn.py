"""Conv3D, the depthwise conv2d ops and the 3-D pools have no CUDA kernel: on a GPU device
they run their CPU kernel on the host, between GPU kernels, forward and backward."""
import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.gpu


def test_conv3d_depthwise_and_pool3d_run_inside_a_gpu_partition():
    tf.reset_default_graph()
    rng = np.random.RandomState(0)
    x3, w3 = rng.randn(1, 3, 4, 4, 2).astype(np.float32), rng.randn(2, 2, 2, 2, 2).astype(np.float32)
    x2, w2 = rng.randn(1, 4, 4, 2).astype(np.float32), rng.randn(2, 2, 2, 2).astype(np.float32)
    with tf.device("/gpu:0"):
        a = tf.constant(x3) * 2.0
        y3 = tf.nn.avg_pool3d(tf.nn.max_pool3d(tf.nn.conv3d(a, w3, [1, 1, 1, 1, 1], "SAME"),
                                               2, 1, "SAME"), 2, 1, "VALID")
        b = tf.constant(x2) * 2.0
        y2 = tf.nn.depthwise_conv2d(b, w2, [1, 1, 1, 1], "VALID")
        loss = tf.reduce_sum(y3 * 3.0) + tf.reduce_sum(y2 * 3.0)
        grads = tf.gradients(loss, [a, b])
    with tf.device("/cpu:0"):
        c3, c2 = tf.constant(x3 * 2.0), tf.constant(x2 * 2.0)
        cpu_loss = tf.reduce_sum(tf.nn.avg_pool3d(tf.nn.max_pool3d(
            tf.nn.conv3d(c3, w3, [1, 1, 1, 1, 1], "SAME"), 2, 1, "SAME"), 2, 1, "VALID") * 3.0) + \
            tf.reduce_sum(tf.nn.depthwise_conv2d(c2, w2, [1, 1, 1, 1], "VALID") * 3.0)
        cpu_grads = tf.gradients(cpu_loss, [c3, c2])
    with tf.Session() as sess:
        got, want = sess.run([[loss] + grads, [cpu_loss] + cpu_grads])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
