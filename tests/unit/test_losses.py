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
    lambda x: tf.losses.softmax_cross_entropy(ONEHOT, x, weights=WEIGHTS[:, 0], label_smoothing=0.1),
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
    got, want = run([loss, same], {labels: [[0], [2], [1], [1]], weights: [[1.0], [0.0], [2.0], [1.0]]})
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got = run(loss, {labels: [0, 2, 1, 1], weights: [1.0, 0.0, 2.0, 1.0]})
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_none_collection_keeps_losses_out():
    tf.losses.mean_squared_error([1.0], [2.0], loss_collection=None)
    assert tf.losses.get_losses() == []
    with pytest.raises(ValueError, match="at least one"):
        tf.losses.get_total_loss()
