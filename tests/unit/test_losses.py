"""tf.losses beyond the goldens: finite-difference gradients, argument errors, fed shapes
of unknown rank, and the contrib-style regularizers."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient, run

RNG = np.random.RandomState(11)
ONEHOT = np.eye(3)[[0, 2, 1, 1]]
WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5]])


def _away_from(values, kinks, margin=0.1):
    out = np.array(values, dtype=np.float64)
    for k in kinks:
        out[np.abs(out - k) < margin] = k + 2 * margin
    return out


# Losses reduce in float32 as TF's do, so the differences use a wide step and tolerance.
GRAD_TOL = dict(rtol=5e-3, atol=5e-3, delta=1e-2)


@pytest.mark.parametrize("loss", [
    lambda x: tf.losses.softmax_cross_entropy(ONEHOT, x, weights=WEIGHTS[:, 0],
                                              label_smoothing=0.1),
    lambda x: tf.losses.sparse_softmax_cross_entropy([0, 2, 1, 1], x, weights=WEIGHTS),
    lambda x: tf.losses.sigmoid_cross_entropy(ONEHOT, x, label_smoothing=0.2,
                                              reduction=tf.losses.Reduction.MEAN),
    lambda x: tf.losses.mean_squared_error(ONEHOT, x, weights=WEIGHTS,
                                           reduction=tf.losses.Reduction.SUM),
    lambda x: tf.losses.mean_pairwise_squared_error(ONEHOT, x, weights=WEIGHTS),
    lambda x: tf.losses.log_loss(ONEHOT, tf.sigmoid(x)),
    lambda x: tf.losses.cosine_distance(ONEHOT, x, axis=1, weights=WEIGHTS),
], ids=["softmax", "sparse_softmax", "sigmoid", "mse", "pairwise", "log", "cosine"])
def test_smooth_loss_gradients_match_finite_differences(loss):
    check_gradient(loss, [RNG.randn(4, 3)], **GRAD_TOL)


def test_kinked_loss_gradients_match_finite_differences():
    labels = np.zeros((4, 3))
    x = _away_from(RNG.randn(4, 3) * 2, [-1.0, 0.0, 1.0])
    check_gradient(lambda t: tf.losses.absolute_difference(labels, t), [x], **GRAD_TOL)
    check_gradient(lambda t: tf.losses.huber_loss(labels, t, delta=0.5), [x], **GRAD_TOL)
    check_gradient(lambda t: tf.losses.hinge_loss(ONEHOT, t), [x], **GRAD_TOL)


def test_weights_gradient_flows():
    losses = RNG.rand(3, 2)
    check_gradient(lambda w: tf.losses.compute_weighted_loss(losses, w, reduction="weighted_sum"),
                   [np.array([[1.0], [2.0], [0.5]])], **GRAD_TOL)


def test_invalid_reduction_names_the_key():
    with pytest.raises(ValueError, match="Invalid Reduction Key bogus"):
        tf.losses.mean_squared_error([1.0], [2.0], reduction="bogus")


def test_weights_that_cannot_broadcast_raise():
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.losses.mean_squared_error(np.zeros((4, 3)), np.ones((4, 3)), weights=np.ones(4))
    with pytest.raises(ValueError, match="Mismatch at dim 1"):
        tf.losses.mean_squared_error(np.zeros((4, 3)), np.ones((4, 3)), weights=np.ones((4, 2)))


def test_missing_arguments_are_named():
    with pytest.raises(ValueError, match="`onehot_labels` must not be None"):
        tf.losses.softmax_cross_entropy(None, [[1.0]])
    with pytest.raises(ValueError, match="You must specify argument `axis`"):
        tf.losses.cosine_distance([[1.0]], [[1.0]])
    with pytest.raises(ValueError, match="are incompatible"):
        tf.losses.mean_squared_error(np.zeros((4, 3)), np.ones((4, 2)))


def test_unknown_rank_labels_and_weights_are_squeezed_at_run_time():
    logits = RNG.randn(4, 3).astype(np.float32)
    labels = tf.placeholder(tf.int64)          # rank unknown until fed
    weights = tf.placeholder(tf.float32)
    x = tf.constant(logits)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, x, weights=weights)
    same = tf.losses.sparse_softmax_cross_entropy([0, 2, 1, 1], x, weights=[1.0, 0.0, 2.0, 1.0])
    got, want = run([loss, same], {labels: [[0], [2], [1], [1]],
                                   weights: [[1.0], [0.0], [2.0], [1.0]]})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got = run(loss, {labels: [0, 2, 1, 1], weights: [1.0, 0.0, 2.0, 1.0]})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_none_collection_keeps_losses_out():
    tf.losses.mean_squared_error([1.0], [2.0], loss_collection=None)
    assert tf.losses.get_losses() == []
    with pytest.raises(ValueError, match="at least one"):
        tf.losses.get_total_loss()


# -- tf.contrib.layers regularizers -------------------------------------------------------
def test_get_variable_regularizer_feeds_the_regularization_loss():
    w0 = RNG.randn(3, 2).astype(np.float32)
    w = tf.get_variable("w", initializer=w0, regularizer=tf.contrib.layers.l2_regularizer(0.1))
    b = tf.get_variable("b", initializer=np.ones(2, np.float32),
                        regularizer=tf.contrib.layers.l1_regularizer(0.5))
    reg = tf.losses.get_regularization_losses()
    assert [t.name for t in reg] == ["w/Regularizer/l2_regularizer:0",
                                     "b/Regularizer/l1_regularizer:0"]
    data_loss = tf.losses.mean_squared_error(np.zeros((1, 2)),
                                             tf.reduce_sum(w, 0, keepdims=True) + b)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        total, reg_sum, data = sess.run([tf.losses.get_total_loss(),
                                         tf.losses.get_regularization_loss(), data_loss])
    want_reg = 0.1 * (w0 ** 2).sum() / 2 + 0.5 * 2.0
    assert reg_sum == pytest.approx(want_reg, rel=1e-5)
    assert total == pytest.approx(want_reg + data, rel=1e-5)


def test_l1_l2_and_apply_regularization():
    w0, v0 = RNG.randn(2, 2), RNG.randn(3)
    w, v = tf.constant(w0), tf.constant(v0)
    penalty = tf.contrib.layers.apply_regularization(
        tf.contrib.layers.l1_l2_regularizer(scale_l1=0.3, scale_l2=0.2), [w, v])
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [penalty]
    assert penalty.op.name == "get_regularization_penalty"
    want = sum(0.3 * np.abs(x).sum() + 0.2 * (x ** 2).sum() / 2 for x in (w0, v0))
    assert run(penalty) == pytest.approx(want)
    only_l2 = tf.contrib.layers.l1_l2_regularizer(0.0, 0.2)(w)
    assert run(only_l2) == pytest.approx(0.2 * (w0 ** 2).sum() / 2)


def test_regularizer_scales_are_checked():
    assert tf.contrib.layers.l2_regularizer(0.0)(tf.constant([1.0])) is None
    assert tf.contrib.layers.sum_regularizer([None]) is None
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        tf.contrib.layers.l1_regularizer(1)
    with pytest.raises(ValueError, match="less than 0"):
        tf.contrib.layers.l2_regularizer(-0.5)
    with pytest.raises(ValueError, match="No weights to regularize"):
        tf.contrib.layers.apply_regularization(tf.contrib.layers.l2_regularizer(0.1))


def test_regularizer_gradients_match_finite_differences():
    reg = tf.contrib.layers.l1_l2_regularizer(0.3, 0.2)
    check_gradient(lambda t: reg(t), [_away_from(RNG.randn(3, 2), [0.0])], **GRAD_TOL)
