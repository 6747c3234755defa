"""selu, crelu, lrn and weighted_cross_entropy_with_logits."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

X = np.random.RandomState(0).randn(2, 3, 2, 7)


def _lrn_numpy(x, r, bias, alpha, beta):
    out = np.empty_like(x)
    for c in range(x.shape[-1]):
        lo, hi = max(0, c - r), min(x.shape[-1], c + r + 1)
        out[..., c] = x[..., c] / (bias + alpha * np.sum(x[..., lo:hi] ** 2, -1)) ** beta
    return out


def test_selu_and_crelu():
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    y = tf.nn.selu(X)
    np.testing.assert_allclose(run(y), np.where(X > 0, scale * X, scale * alpha * np.expm1(X)))
    check_against_reference(y)
    c = tf.nn.crelu(X, axis=1)
    assert c.shape.as_list() == [2, 6, 2, 7]
    np.testing.assert_array_equal(run(c), np.maximum(np.concatenate([X, -X], 1), 0))


@pytest.mark.parametrize("r,bias,alpha,beta", [(5, 1.0, 1.0, 0.5), (2, 2.0, 0.3, 0.75), (0, 1.0, 1.0, 1.0)])
def test_lrn(r, bias, alpha, beta):
    x = X.astype(np.float32)
    y = tf.nn.local_response_normalization(x, depth_radius=r, bias=bias, alpha=alpha, beta=beta)
    np.testing.assert_allclose(run(y), _lrn_numpy(X, r, bias, alpha, beta), rtol=1e-5)
    check_against_reference(y)
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.lrn(x[0])
    with pytest.raises(TypeError, match="float64"):
        tf.nn.lrn(X)


def test_weighted_cross_entropy():
    z = (np.random.RandomState(1).rand(4, 3) > 0.5).astype(np.float64)
    x = np.random.RandomState(2).randn(4, 3) * 3
    y = tf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=2.5)
    sig = 1 / (1 + np.exp(-x))
    want = -(2.5 * z * np.log(sig) + (1 - z) * np.log(1 - sig))
    np.testing.assert_allclose(run(y), want, rtol=1e-10)
    assert y.op.name == "logistic_loss"
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.weighted_cross_entropy_with_logits(labels=z[:2], logits=x, pos_weight=1.0)


def _lrn_f64(x):
    # LRN takes float16/32 only: the check runs in float32 around a float64 graph.
    return tf.cast(tf.nn.lrn(tf.cast(x, tf.float32), 2, 1.5, 0.4, 0.75), tf.float64)


@pytest.mark.parametrize("build,rtol", [
    (lambda x: tf.nn.selu(x) * np.arange(84.0).reshape(X.shape), 1e-3),
    (lambda x: tf.gradients(tf.reduce_sum(tf.nn.selu(x) ** 2), x)[0], 1e-3),
    (lambda x: tf.nn.crelu(x) ** 2, 1e-3),
    (lambda x: _lrn_f64(x) * np.arange(84.0).reshape(X.shape), 2e-2),
    (lambda x: tf.nn.weighted_cross_entropy_with_logits(labels=tf.sigmoid(x[::-1]), logits=x,
                                                        pos_weight=3.0), 1e-3),
])
def test_gradients(build, rtol):
    check_gradient(build, [X], rtol=rtol, atol=1e-3 if rtol > 1e-3 else 1e-4)


def test_lrn_grad_reference_against_float64_differences():
    from dtf.kernels.reference import REFERENCE

    attrs = {"depth_radius": 2, "bias": 1.5, "alpha": 0.4, "beta": 0.75}
    x = X[:1, :2]
    w = np.random.RandomState(3).randn(*x.shape)
    got = REFERENCE["LRNGrad"](attrs, w, x, REFERENCE["LRN"](attrs, x))
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[idx] = 1e-6
        num[idx] = np.sum(w * (_lrn_numpy(x + d, 2, 1.5, 0.4, 0.75) - _lrn_numpy(x - d, 2, 1.5, 0.4, 0.75))) / 2e-6
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)


def test_swish_log_poisson_relu_layer_zero_fraction():
    x = np.array([-2.0, 0.0, 1.5])
    np.testing.assert_allclose(run(tf.nn.swish(x)), x / (1 + np.exp(-x)))
    t, li = np.array([0.5, 2.0, 7.0]), np.array([0.1, -0.3, 2.0])
    stirling = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
    np.testing.assert_allclose(run(tf.nn.log_poisson_loss(t, li)), np.exp(li) - li * t)
    np.testing.assert_allclose(run(tf.nn.log_poisson_loss(t, li, compute_full_loss=True)),
                               np.exp(li) - li * t + np.where(t <= 1, 0, stirling))
    w, b = np.ones((3, 2)), np.array([-10.0, 1.0])
    np.testing.assert_allclose(run(tf.nn.relu_layer(x[None], w, b)), [[0.0, 0.5]])
    z = tf.nn.zero_fraction(tf.constant([[0.0, 1.0], [0.0, 0.0]]))
    assert z.dtype == tf.float32 and run(z) == 0.75
    check_gradient(lambda v: tf.nn.swish(v) + tf.nn.log_poisson_loss(v * v, v, compute_full_loss=True), [x + 3.3])
