"""tf.nn beyond conv and normalization layers: selu, elu, crelu, relu6, leaky_relu, lrn,
weighted and v2 softmax cross-entropies (gradient into labels too), in_top_k, top_k,
log_softmax; values and gradients."""
import numpy as np

from tests.goldens.harness import case


def _weighted_grads(tf, y, xs, seed=0):
    w = np.asarray(np.random.RandomState(seed).randn(*y.shape.as_list()), y.dtype.as_numpy_dtype)
    return tf.gradients(tf.reduce_sum(y * w), xs)


@case
def activations(tf):
    x = tf.constant(np.random.RandomState(0).randn(3, 8).astype(np.float32) * 3)
    out = {"selu": tf.nn.selu(x), "elu": tf.nn.elu(x), "crelu": tf.nn.crelu(x),
           "crelu0": tf.nn.crelu(x, axis=0), "relu6": tf.nn.relu6(x),
           "leaky": tf.nn.leaky_relu(x, alpha=0.1), "log_softmax": tf.nn.log_softmax(x)}
    for key in list(out):
        out[f"d_{key}"], = _weighted_grads(tf, out[key], [x])
    dselu, = tf.gradients(tf.reduce_sum(tf.nn.selu(x) ** 2), [x])
    out["dd_selu"], = tf.gradients(tf.reduce_sum(dselu * dselu), [x])
    return out


@case(rtol=1e-5, atol=1e-5)
def second_order_elu_softplus(tf):
    # EluGrad and SoftplusGrad have gradients of their own: through the incoming gradient
    # and through the op's output (elu) or input (softplus).
    x = tf.constant(np.random.RandomState(3).randn(3, 8).astype(np.float32) * 2)
    out = {}
    for key, fn in (("elu", tf.nn.elu), ("softplus", tf.nn.softplus)):
        d, = tf.gradients(tf.reduce_sum(fn(x) ** 2), [x])
        out[f"dd_{key}"], = tf.gradients(tf.reduce_sum(d * d), [x])
        dw, = _weighted_grads(tf, fn(x), [x], seed=4)
        out[f"dd_{key}_weighted"], = _weighted_grads(tf, dw, [x], seed=5)
    return out


@case(rtol=1e-5, atol=1e-5)
def local_response_normalization(tf):
    x = tf.constant(np.random.RandomState(1).randn(2, 3, 3, 9).astype(np.float32))
    out = {"lrn": tf.nn.lrn(x), "lrn_args": tf.nn.local_response_normalization(
        x, depth_radius=2, bias=2.0, alpha=0.3, beta=0.75)}
    out["d_lrn"], = _weighted_grads(tf, out["lrn"], [x])
    out["d_lrn_args"], = _weighted_grads(tf, out["lrn_args"], [x], seed=1)
    return out


@case
def cross_entropies(tf):
    rng = np.random.RandomState(2)
    logits = tf.constant(rng.randn(4, 5).astype(np.float32) * 2)
    labels = tf.constant(rng.dirichlet(np.ones(5), size=4).astype(np.float32))
    binary = tf.constant((rng.rand(4, 5) > 0.5).astype(np.float32))
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    v2_axis0 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=0)
    weighted = tf.nn.weighted_cross_entropy_with_logits(labels=binary, logits=logits, pos_weight=3.0)
    out = {"v2": v2, "v2_axis0": v2_axis0, "weighted": weighted}
    out["d_v2_logits"], out["d_v2_labels"] = _weighted_grads(tf, v2, [logits, labels])
    out["d_axis0_logits"], out["d_axis0_labels"] = _weighted_grads(tf, v2_axis0, [logits, labels])
    out["d_weighted_logits"], out["d_weighted_labels"] = _weighted_grads(tf, weighted, [logits, binary])
    return out


@case
def top_k_and_in_top_k(tf):
    x = tf.constant(np.random.RandomState(3).randn(4, 6).astype(np.float32))
    values, indices = tf.nn.top_k(x, 3)
    targets = tf.constant([0, 5, 2, 3])
    d_values, = _weighted_grads(tf, values, [x])
    return {"values": values, "indices": indices, "d_values": d_values,
            "in_top_1": tf.nn.in_top_k(x, targets, 1), "in_top_3": tf.nn.in_top_k(x, targets, 3)}


@case
def swish_poisson_relu_layer_zero_fraction(tf):
    rng = np.random.RandomState(4)
    x = tf.constant(rng.randn(3, 4).astype(np.float32))
    targets = tf.constant(np.array([[0.5, 2.0, 7.0, 0.0]] * 3, np.float32))
    w = tf.constant(rng.randn(4, 2).astype(np.float32))
    b = tf.constant([0.1, -0.2])
    out = {"swish": tf.nn.swish(x), "poisson": tf.nn.log_poisson_loss(targets, x),
           "poisson_full": tf.nn.log_poisson_loss(targets, x, compute_full_loss=True),
           "relu_layer": tf.nn.relu_layer(x, w, b), "zero_fraction": tf.nn.zero_fraction(tf.nn.relu(x))}
    for key in ("swish", "poisson_full", "relu_layer"):
        out[f"d_{key}"], = _weighted_grads(tf, out[key], [x])
    return out
