"""tf.losses: values and gradients of every loss, every reduction, weights of each shape
TF accepts, and the LOSSES / REGULARIZATION_LOSSES totals."""
import numpy as np

from tests.goldens.harness import case

REDUCTIONS = ("NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS",
              "SUM_OVER_NONZERO_WEIGHTS")


def _inputs(seed, shape=(4, 3)):
    rng = np.random.RandomState(seed)
    logits = rng.randn(*shape).astype(np.float32)
    onehot = np.eye(shape[-1], dtype=np.float32)[rng.randint(0, shape[-1], shape[:-1])]
    return rng, logits, onehot


def _with_grads(tf, out, wrt):
    """out plus d(each loss)/d(wrt) for every float loss in ``out``."""
    res = dict(out)
    for k, v in out.items():
        res[f"d_{k}"] = tf.gradients(tf.reduce_sum(v), wrt)[0]
    return res


@case
def softmax_cross_entropy_every_reduction(tf):
    rng, logits, onehot = _inputs(0)
    x = tf.constant(logits)
    w = tf.constant([1.0, 0.0, 2.0, 0.5])
    out = {r: tf.losses.softmax_cross_entropy(onehot, x, weights=w, label_smoothing=0.1,
                                              reduction=getattr(tf.losses.Reduction, r))
           for r in REDUCTIONS}
    out["scalar_weight"] = tf.losses.softmax_cross_entropy(onehot, x, weights=3.0)
    out["no_weight"] = tf.losses.softmax_cross_entropy(onehot, x)
    res = _with_grads(tf, out, x)
    res["name"] = out["no_weight"].name
    return res


@case
def sparse_softmax_cross_entropy_weights(tf):
    rng, logits, _ = _inputs(1)
    labels = rng.randint(0, 3, (4, 1)).astype(np.int64)
    x = tf.constant(logits)
    out = {
        "column_labels_and_weights": tf.losses.sparse_softmax_cross_entropy(
            labels, x, weights=np.array([[1.0], [0.0], [2.0], [1.0]], np.float32)),
        "vector_labels": tf.losses.sparse_softmax_cross_entropy(labels[:, 0], x),
        "sum": tf.losses.sparse_softmax_cross_entropy(
            labels[:, 0], x, weights=[0.5, 1.0, 0.0, 2.0], reduction=tf.losses.Reduction.SUM),
        "none": tf.losses.sparse_softmax_cross_entropy(
            labels[:, 0], x, reduction=tf.losses.Reduction.NONE),
    }
    return _with_grads(tf, out, x)


@case
def sparse_softmax_cross_entropy_fed_labels(tf):
    rng, logits, _ = _inputs(2)
    labels = tf.placeholder(tf.int32, [None])
    x = tf.placeholder(tf.float32, [None, 3])
    loss = tf.losses.sparse_softmax_cross_entropy(labels, x)
    return ({"loss": loss, "d": tf.gradients(loss, x)[0]},
            {labels: rng.randint(0, 3, 4), x: logits})


@case
def sigmoid_cross_entropy_smoothing(tf):
    rng, logits, onehot = _inputs(3)
    x = tf.constant(logits)
    out = {
        "smoothed": tf.losses.sigmoid_cross_entropy(onehot, x, label_smoothing=0.2),
        "weighted_columns": tf.losses.sigmoid_cross_entropy(
            onehot, x, weights=np.array([[1.0, 0.0, 2.0]], np.float32)),
        "mean": tf.losses.sigmoid_cross_entropy(onehot, x, weights=[[1.0], [2.0], [0.0], [1.0]],
                                                reduction=tf.losses.Reduction.MEAN),
    }
    return _with_grads(tf, out, x)


@case
def regression_losses(tf):
    rng, pred, _ = _inputs(4)
    labels = rng.randn(4, 3).astype(np.float32)
    p = tf.constant(pred)
    w = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)
    out = {}
    for r in REDUCTIONS:
        red = getattr(tf.losses.Reduction, r)
        out[f"mse_{r}"] = tf.losses.mean_squared_error(labels, p, weights=w, reduction=red)
        out[f"abs_{r}"] = tf.losses.absolute_difference(labels, p, weights=w, reduction=red)
    out["huber"] = tf.losses.huber_loss(labels, p, weights=w)
    out["huber_delta"] = tf.losses.huber_loss(labels, p, delta=0.3)
    out["pairwise"] = tf.losses.mean_pairwise_squared_error(labels, p, weights=w)
    out["pairwise_scalar"] = tf.losses.mean_pairwise_squared_error(labels, p)
    return _with_grads(tf, out, p)


@case
def probability_losses(tf):
    rng, logits, onehot = _inputs(5)
    probs = tf.constant(1.0 / (1.0 + np.exp(-logits)))
    x = tf.constant(logits)
    out = {
        "log": tf.losses.log_loss(onehot, probs),
        "log_eps": tf.losses.log_loss(onehot, probs, epsilon=0.1,
                                      weights=[[1.0], [0.0], [2.0], [1.0]]),
        "hinge": tf.losses.hinge_loss(onehot, x),
        "hinge_sum": tf.losses.hinge_loss(onehot, x, weights=2.0,
                                          reduction=tf.losses.Reduction.SUM),
    }
    res = _with_grads(tf, {k: out[k] for k in ("hinge", "hinge_sum")}, x)
    res.update(_with_grads(tf, {k: out[k] for k in ("log", "log_eps")}, probs))
    return res


@case
def cosine_distance_axis_and_dim(tf):
    rng, pred, _ = _inputs(6)
    labels = rng.randn(4, 3).astype(np.float32)
    labels /= np.linalg.norm(labels, axis=1, keepdims=True)
    p = tf.nn.l2_normalize(tf.constant(pred), 1)
    out = {
        "axis": tf.losses.cosine_distance(labels, p, axis=1),
        "dim": tf.losses.cosine_distance(labels, p, dim=1, weights=[[1.0], [0.0], [2.0], [1.0]]),
        "none": tf.losses.cosine_distance(labels, p, axis=1,
                                          reduction=tf.losses.Reduction.NONE),
    }
    return _with_grads(tf, out, p)


@case
def compute_weighted_loss_and_collections(tf):
    rng = np.random.RandomState(7)
    per_example = tf.constant(rng.rand(3, 2).astype(np.float32))
    a = tf.losses.compute_weighted_loss(per_example, weights=[[0.0, 1.0]])
    b = tf.losses.compute_weighted_loss(per_example, weights=[[2.0], [0.0], [1.0]],
                                        reduction=tf.losses.Reduction.MEAN)
    c = tf.losses.compute_weighted_loss(per_example, loss_collection=None)
    v = tf.Variable(rng.randn(2, 2).astype(np.float32), name="v")
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, 0.1 * tf.nn.l2_loss(v))
    extra = tf.constant(0.25)
    tf.losses.add_loss(extra)
    tensors = {
        "a": a, "b": b, "c": c,
        "total": tf.losses.get_total_loss(),
        "total_without_reg": tf.losses.get_total_loss(add_regularization_losses=False),
        "reg": tf.losses.get_regularization_loss(),
        "d_total_dv": tf.gradients(tf.losses.get_total_loss(), v)[0],
    }
    facts = {
        "n_losses": len(tf.losses.get_losses()),
        "n_reg": len(tf.losses.get_regularization_losses()),
        "loss_names": [t.name for t in tf.losses.get_losses()],
        "total_name": tf.losses.get_total_loss(name="my_total").name,
    }

    def run(sess):
        return {**sess.run(tensors), **facts}
    return run


@case
def regularization_loss_when_empty(tf):
    reg = tf.losses.get_regularization_loss()
    n = len(tf.losses.get_regularization_losses())
    return lambda sess: {"reg": sess.run(reg), "n": n}


@case
def dtypes_scopes_and_fed_weights(tf):
    rng, logits, onehot = _inputs(8)
    x64 = tf.constant(logits.astype(np.float64))
    w = tf.placeholder(tf.float32, [None])
    with tf.name_scope("outer"):
        xent64 = tf.losses.softmax_cross_entropy(onehot, x64, weights=w, scope="xent")
    sig64 = tf.losses.sigmoid_cross_entropy(onehot.astype(np.int32), x64)
    mse_int = tf.losses.mean_squared_error(np.array([[1, 2]], np.int32),
                                           tf.constant([[0.5, 2.5]]))
    tensors = {"xent64": xent64, "sig64": sig64, "mse_int": mse_int,
               "d_xent64": tf.gradients(xent64, x64)[0]}
    facts = {"names": [xent64.name, sig64.name, mse_int.name],
             "dtypes": [xent64.dtype.name, sig64.dtype.name, mse_int.dtype.name]}
    return lambda sess: {**sess.run(tensors, {w: [1.0, 0.0, 0.5, 2.0]}), **facts}
