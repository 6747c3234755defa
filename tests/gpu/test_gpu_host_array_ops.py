"""The array, segment, sort, matrix, linalg, special-function and extra nn ops without a
CUDA kernel run their CPU kernel on the host inside a GPU partition, between GPU kernels,
forward and backward, with no soft placement."""
import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.gpu


def test_host_run_ops_inside_a_gpu_partition():
    tf.reset_default_graph()
    rng = np.random.RandomState(0)
    a = (rng.randn(3, 3) + 3 * np.eye(3)).astype(np.float32)
    with tf.device("/gpu:0"):
        x = tf.Variable(a, name="x")
        t = x * 2.0
        picked = tf.gather_nd(t, [[0, 1], [2, 2]])
        seg = tf.segment_max(t, [0, 0, 1]) + tf.unsorted_segment_mean(t, [1, -1, 1], 2)
        inv = tf.matrix_inverse(t)
        band = tf.matrix_band_part(inv, 0, -1) + tf.eye(3)
        special = tf.lgamma(tf.abs(t) + 1.0) + tf.nn.selu(t)
        loss = (tf.reduce_sum(picked) + tf.reduce_sum(seg * seg) + tf.reduce_sum(band)
                + tf.reduce_sum(special) + tf.reduce_sum(tf.einsum("ij,jk->ik", t, inv)))
        grad, = tf.gradients(loss, [x])
        uniq = tf.unique(tf.cast(tf.reshape(tf.round(t), [-1]), tf.int32)).y
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_loss, got_grad, got_uniq = sess.run([loss, grad, uniq])
    t2 = a.astype(np.float64) * 2
    inv2 = np.linalg.inv(t2)
    seg_want = np.stack([t2[:2].max(0), t2[2]]) + np.stack([np.zeros(3), (t2[0] + t2[2]) / 2])
    import math
    special_want = np.vectorize(math.lgamma)(np.abs(t2) + 1) + np.where(
        t2 > 0, 1.0507009873554805 * t2, 1.0507009873554805 * 1.6732632423543772 * np.expm1(t2))
    want = (t2[0, 1] + t2[2, 2] + np.sum(seg_want ** 2) + np.sum(np.triu(inv2) + np.eye(3))
            + special_want.sum() + np.sum(t2 @ inv2))
    np.testing.assert_allclose(got_loss, want, rtol=1e-4)
    assert got_grad.shape == (3, 3) and np.isfinite(got_grad).all()
    np.testing.assert_array_equal(got_uniq, list(dict.fromkeys(np.round(t2).astype(int).reshape(-1))))
