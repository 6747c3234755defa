"""tf.layers: outputs, gradients, variable names, shapes and collections, batch-norm moving
statistics after training steps. Weights come from tf.constant_initializer(array) so values
compare.

Recording needs TF's Keras-2 layers: under Keras 3 tf.compat.v1.layers is gone, so the
``tf_keras`` package (the version matching TensorFlow's) must be importable beside it;
regenerate.py sets ``TF_USE_LEGACY_KERAS=1``.
"""
import numpy as np

from tests.goldens.harness import case

F32 = np.float32


def _init(rng, *shape):
    return rng.randn(*shape).astype(F32) * 0.5


def _names(variables):
    return np.asarray([v.name for v in variables])


def _collection_names(tf, key):
    return np.asarray([v.name for v in tf.get_collection(key)])


def _fetch(tf, values, feeds=None):
    """A run(sess) recording ``values``: tensors are fetched, anything else (names,
    shapes, counts) is recorded as it is."""
    def run(sess):
        tensors = {k: v for k, v in values.items() if isinstance(v, (tf.Tensor, tf.Operation))}
        fetched = sess.run(tensors, feeds) if tensors else {}
        return {k: fetched[k] if k in fetched else v for k, v in values.items()}
    return run


def _layer_case(tf, seed, x_shape, make_layer, extra=None):
    """Applies make_layer(rng) to a fed input; records y, dy/dx and dy/d(every variable)
    for sum(y * random weights), the variables' names and shapes and the trainable ones."""
    rng = np.random.RandomState(seed)
    x = tf.placeholder(tf.float32, x_shape)
    layer = make_layer(rng)
    y = layer(x) if not extra else layer(x, **extra)
    w = tf.constant(rng.randn(*[2 if d is None else d for d in y.shape.as_list()]).astype(F32))
    variables = tf.global_variables()
    grads = tf.gradients(tf.reduce_sum(y * w), [x] + tf.trainable_variables())
    fetches = {"y": y, "dx": grads[0], "names": _names(variables),
               "trainable": _collection_names(tf, tf.GraphKeys.TRAINABLE_VARIABLES),
               "static_shape": np.asarray([-1 if d is None else d for d in y.shape.as_list()])}
    for i, (v, g) in enumerate(zip(tf.trainable_variables(), grads[1:])):
        fetches[f"d_{v.op.name}"] = g
    for v in variables:
        fetches[f"shape_{v.op.name}"] = np.asarray(v.shape.as_list())
    feed = [2 if d is None else d for d in x_shape]
    return _fetch(tf, fetches, {x: rng.randn(*feed).astype(F32)})


@case(rtol=1e-4, atol=1e-5)
def dense_relu(tf):
    return _layer_case(tf, 0, [None, 4], lambda rng: tf.layers.Dense(
        3, activation=tf.nn.relu, kernel_initializer=tf.constant_initializer(_init(rng, 4, 3)),
        bias_initializer=tf.constant_initializer(_init(rng, 3))))


@case(rtol=1e-4, atol=1e-5)
def dense_rank3_no_bias(tf):
    return _layer_case(tf, 1, [2, 5, 4], lambda rng: tf.layers.Dense(
        3, use_bias=False, kernel_initializer=tf.constant_initializer(_init(rng, 4, 3))))


@case
def dense_names_scopes_and_reuse(tf):
    x = tf.placeholder(tf.float32, [None, 3])
    a = tf.layers.dense(x, 2)
    b = tf.layers.dense(x, 2)
    tf.layers.Dense(2, name="fc")(x)
    tf.layers.Dense(2, name="fc")(x)
    with tf.variable_scope("model"):
        tf.layers.dense(x, 2, name="out")
    with tf.variable_scope("model", reuse=True):
        shared = tf.layers.dense(x, 2, name="out")
    with tf.variable_scope("tower"):
        tf.layers.dense(x, 2)
    with tf.variable_scope("tower", reuse=True):
        tf.layers.dense(x, 2)
    layer = tf.layers.Dense(4)
    layer(x)
    layer(x)  # a second call reuses the layer's variables
    tf.layers.dense(x, 2, name="named")
    try:
        tf.layers.dense(x, 2, name="named")
        error = "none"
    except ValueError as e:
        error = type(e).__name__
    names = _names(tf.global_variables())
    return _fetch(tf, {"names": names, "trainable": _collection_names(tf, tf.GraphKeys.TRAINABLE_VARIABLES),
            "layer_vars": _names(layer.variables), "layer_name": layer.name,
            "layer_scope": layer.scope_name, "a": a.shape.as_list()[1], "b_op": b.op.name,
            "shared_ok": shared.shape.as_list()[1], "second_named_error": error})


@case(rtol=1e-5, atol=1e-6)
def regularization_losses(tf):
    rng = np.random.RandomState(3)
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.layers.dense(x, 3, kernel_initializer=tf.constant_initializer(_init(rng, 4, 3)),
                        kernel_regularizer=lambda w: 0.1 * tf.reduce_sum(tf.square(w)),
                        bias_regularizer=lambda b: tf.reduce_sum(tf.abs(b)),
                        activity_regularizer=lambda a: 0.01 * tf.reduce_sum(tf.square(a)),
                        bias_initializer=tf.constant_initializer(_init(rng, 3)))
    z = tf.layers.conv2d(tf.reshape(y, [-1, 1, 3, 1]), 2, [1, 2],
                         kernel_initializer=tf.constant_initializer(_init(rng, 1, 2, 1, 2)),
                         kernel_regularizer=lambda w: tf.reduce_sum(w))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    total = tf.add_n(losses)
    grad = tf.gradients(total, x)[0]
    return _fetch(tf, {"losses": tf.stack(losses), "count": len(losses), "total": total,
                       "dx": grad, "z": z}, {x: rng.randn(5, 4).astype(F32)})


@case(rtol=1e-4, atol=1e-5)
def conv1d_layer(tf):
    return _layer_case(tf, 4, [None, 9, 3], lambda rng: tf.layers.Conv1D(
        4, 3, strides=2, padding="Same", activation=tf.nn.tanh,
        kernel_initializer=tf.constant_initializer(_init(rng, 3, 3, 4)),
        bias_initializer=tf.constant_initializer(_init(rng, 4))))


@case(rtol=1e-4, atol=1e-5)
def conv1d_layer_causal_dilated(tf):
    return _layer_case(tf, 5, [2, 8, 2], lambda rng: tf.layers.Conv1D(
        3, 2, padding="causal", dilation_rate=2,
        kernel_initializer=tf.constant_initializer(_init(rng, 2, 2, 3))))


@case(rtol=1e-4, atol=1e-5)
def conv2d_layer(tf):
    return _layer_case(tf, 6, [None, 7, 6, 3], lambda rng: tf.layers.Conv2D(
        4, (3, 2), strides=(2, 1), padding="VALID",
        kernel_initializer=tf.constant_initializer(_init(rng, 3, 2, 3, 4)),
        bias_initializer=tf.constant_initializer(_init(rng, 4))))


@case(rtol=1e-4, atol=1e-5)
def conv2d_layer_dilated_same(tf):
    return _layer_case(tf, 7, [2, 7, 7, 2], lambda rng: tf.layers.Conv2D(
        3, 3, padding="same", dilation_rate=2, activation=tf.nn.relu,
        kernel_initializer=tf.constant_initializer(_init(rng, 3, 3, 2, 3)),
        bias_initializer=tf.constant_initializer(_init(rng, 3))))


@case(rtol=1e-4, atol=1e-5)
def conv3d_layer(tf):
    return _layer_case(tf, 8, [None, 4, 5, 4, 2], lambda rng: tf.layers.Conv3D(
        3, 2, strides=(1, 2, 2), padding="same",
        kernel_initializer=tf.constant_initializer(_init(rng, 2, 2, 2, 2, 3)),
        bias_initializer=tf.constant_initializer(_init(rng, 3))))


@case(rtol=1e-4, atol=1e-5)
def conv2d_transpose_layer_valid(tf):
    return _layer_case(tf, 9, [None, 3, 4, 2], lambda rng: tf.layers.Conv2DTranspose(
        3, 3, strides=2, padding="valid",
        kernel_initializer=tf.constant_initializer(_init(rng, 3, 3, 3, 2)),
        bias_initializer=tf.constant_initializer(_init(rng, 3))))


@case(rtol=1e-4, atol=1e-5)
def conv2d_transpose_layer_same(tf):
    return _layer_case(tf, 10, [2, 3, 3, 2], lambda rng: tf.layers.Conv2DTranspose(
        2, (2, 3), strides=(2, 1), padding="SAME",
        kernel_initializer=tf.constant_initializer(_init(rng, 2, 3, 2, 2))))


@case(rtol=1e-4, atol=1e-5)
def separable_conv2d_layer(tf):
    return _layer_case(tf, 11, [None, 6, 5, 3], lambda rng: tf.layers.SeparableConv2D(
        2, 3, padding="same", depth_multiplier=2,
        depthwise_initializer=tf.constant_initializer(_init(rng, 3, 3, 3, 2)),
        pointwise_initializer=tf.constant_initializer(_init(rng, 1, 1, 6, 2)),
        bias_initializer=tf.constant_initializer(_init(rng, 2))))


@case(rtol=1e-4, atol=1e-5)
def conv3d_transpose_layer(tf):
    return _layer_case(tf, 21, [None, 2, 3, 2, 2], lambda rng: tf.layers.Conv3DTranspose(
        2, (2, 2, 3), strides=(2, 1, 2), padding="same", activation=tf.nn.relu,
        kernel_initializer=tf.constant_initializer(_init(rng, 2, 2, 3, 2, 2)),
        bias_initializer=tf.constant_initializer(_init(rng, 2))))


@case(rtol=1e-4, atol=1e-5)
def separable_conv1d_layer(tf):
    return _layer_case(tf, 22, [None, 9, 2], lambda rng: tf.layers.SeparableConv1D(
        3, 3, strides=2, padding="same", depth_multiplier=2,
        depthwise_initializer=tf.constant_initializer(_init(rng, 3, 2, 2)),
        pointwise_initializer=tf.constant_initializer(_init(rng, 1, 4, 3)),
        bias_initializer=tf.constant_initializer(_init(rng, 3))))


@case(rtol=1e-4, atol=1e-5)
def separable_conv1d_layer_causal(tf):
    return _layer_case(tf, 23, [2, 7, 2], lambda rng: tf.layers.SeparableConv1D(
        2, 2, padding="causal", dilation_rate=2, use_bias=False,
        depthwise_initializer=tf.constant_initializer(_init(rng, 2, 2, 1)),
        pointwise_initializer=tf.constant_initializer(_init(rng, 1, 2, 2))))


@case(rtol=1e-4, atol=1e-5)
def functional_conv_forms(tf):
    rng = np.random.RandomState(12)
    x = tf.placeholder(tf.float32, [2, 6, 6, 2])
    a = tf.layers.conv2d(x, 2, 3, kernel_initializer=tf.constant_initializer(_init(rng, 3, 3, 2, 2)))
    b = tf.layers.conv2d(x, 2, 3, name="c", kernel_initializer=tf.constant_initializer(
        _init(rng, 3, 3, 2, 2)))
    c = tf.layers.conv2d(x, 2, 3, name="c", reuse=True)
    d = tf.layers.separable_conv2d(x, 3, 2, depthwise_initializer=tf.constant_initializer(
        _init(rng, 2, 2, 2, 1)), pointwise_initializer=tf.constant_initializer(_init(rng, 1, 1, 2, 3)))
    e = tf.layers.conv2d_transpose(x, 1, 2, strides=2, kernel_initializer=tf.constant_initializer(
        _init(rng, 2, 2, 1, 2)))
    f = tf.layers.conv1d(tf.reshape(x, [2, 12, 6]), 2, 3, kernel_initializer=tf.constant_initializer(
        _init(rng, 3, 6, 2)))
    g = tf.layers.conv3d(tf.reshape(x, [2, 3, 4, 6, 1]), 1, 2, kernel_initializer=tf.constant_initializer(
        _init(rng, 2, 2, 2, 1, 1)))
    h = tf.layers.conv3d_transpose(tf.reshape(x, [2, 3, 4, 6, 1]), 2, 2, kernel_initializer=(
        tf.constant_initializer(_init(rng, 2, 2, 2, 2, 1))))
    i = tf.layers.separable_conv1d(tf.reshape(x, [2, 12, 6]), 2, 3, depthwise_initializer=(
        tf.constant_initializer(_init(rng, 3, 6, 1))), pointwise_initializer=(
        tf.constant_initializer(_init(rng, 1, 6, 2))))
    return _fetch(tf, {"a": a, "b": b, "c": c, "d": d, "e": e, "f": f, "g": g, "h": h, "i": i,
                       "names": _names(tf.global_variables())},
                  {x: rng.randn(2, 6, 6, 2).astype(F32)})


@case(rtol=1e-5, atol=1e-6)
def pooling_layers(tf):
    rng = np.random.RandomState(13)
    x1 = tf.placeholder(tf.float32, [2, 9, 3])
    x2 = tf.placeholder(tf.float32, [2, 7, 6, 3])
    x3 = tf.placeholder(tf.float32, [2, 5, 4, 5, 2])
    outs = {
        "max1": tf.layers.max_pooling1d(x1, 3, 2, padding="same"),
        "avg1": tf.layers.average_pooling1d(x1, 2, 2),
        "max2": tf.layers.max_pooling2d(x2, (3, 2), (2, 2)),
        "avg2": tf.layers.average_pooling2d(x2, 3, 2, padding="SAME"),
        "max3": tf.layers.max_pooling3d(x3, 2, (1, 2, 2), padding="same"),
        "avg3": tf.layers.average_pooling3d(x3, 2, 2),
        "cls_max2": tf.layers.MaxPooling2D(2, 2)(x2),
        "cls_avg3": tf.layers.AveragePooling3D((2, 2, 1), (1, 1, 1))(x3),
        "cls_max1": tf.layers.MaxPooling1D(2, 1)(x1),
    }
    loss = sum(tf.reduce_sum(o * o) for o in outs.values())
    outs["d1"], outs["d2"], outs["d3"] = tf.gradients(loss, [x1, x2, x3])
    feeds = {x1: rng.randn(2, 9, 3).astype(F32), x2: rng.randn(2, 7, 6, 3).astype(F32),
             x3: rng.randn(2, 5, 4, 5, 2).astype(F32)}
    return outs, feeds


@case
def flatten_and_dropout(tf):
    rng = np.random.RandomState(14)
    x = tf.placeholder(tf.float32, [None, 2, 3, 2])
    flat = tf.layers.flatten(x)
    off = tf.layers.dropout(flat, 0.5)
    training = tf.placeholder_with_default(False, [])
    dyn = tf.layers.dropout(flat, 0.5, training=training)
    on = tf.layers.Dropout(0.5, noise_shape=[1, None])(tf.ones([4, 30]), training=True)
    # Random streams differ: what compares is the shape and that whole columns drop.
    column_ok = tf.reduce_all(tf.equal(on, on[:1]))
    values_ok = tf.reduce_all(tf.logical_or(tf.equal(on, 0.0), tf.equal(on, 2.0)))
    xv = rng.randn(3, 2, 3, 2).astype(F32)
    static = np.asarray([-1 if d is None else d for d in flat.shape.as_list()])
    return _fetch(tf, {"flat": flat, "static": static, "off": off, "dyn_off": dyn,
                       "column_ok": column_ok, "values_ok": values_ok,
                       "grad": tf.gradients(tf.reduce_sum(off * off), x)[0]}, {x: xv})


def _batch_norm_steps(tf, x_shape, seed, training_steps=3, **bn_args):
    """Trains a batch-norm layer's moving statistics for a few steps with UPDATE_OPS, then
    records train-mode and inference-mode outputs, gradients and the statistics."""
    rng = np.random.RandomState(seed)
    channels = x_shape[bn_args.get("axis", -1)]
    x = tf.placeholder(tf.float32, x_shape)
    layer = tf.layers.BatchNormalization(
        momentum=0.9, gamma_initializer=tf.constant_initializer(rng.rand(channels).astype(F32) + 0.5),
        beta_initializer=tf.constant_initializer(rng.randn(channels).astype(F32)), **bn_args)
    y_train = layer(x, training=True)
    y_infer = layer(x, training=False)
    w = tf.constant(rng.randn(*x_shape).astype(F32))
    grads = tf.gradients(tf.reduce_sum(y_train * w), [x, layer.gamma, layer.beta])
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    feeds = [rng.randn(*x_shape).astype(F32) * 2 + 1 for _ in range(training_steps)]

    def run(sess):
        out = {"names": _names(layer.variables),
               "trainable": _collection_names(tf, tf.GraphKeys.TRAINABLE_VARIABLES),
               "globals": _collection_names(tf, tf.GraphKeys.GLOBAL_VARIABLES),
               "n_updates": len(updates)}
        for i, f in enumerate(feeds):
            out[f"y_train_{i}"], _ = sess.run([y_train, updates], {x: f})
        out["moving_mean"], out["moving_variance"] = sess.run([layer.moving_mean,
                                                               layer.moving_variance])
        out["y_infer"] = sess.run(y_infer, {x: feeds[0]})
        out["dx"], out["dgamma"], out["dbeta"] = sess.run(grads, {x: feeds[0]})
        return out
    return run


@case(rtol=1e-4, atol=1e-4)
def batch_norm_fused_4d(tf):
    return _batch_norm_steps(tf, [4, 3, 3, 2], 15)


@case(rtol=1e-4, atol=1e-4)
def batch_norm_not_fused_4d(tf):
    return _batch_norm_steps(tf, [4, 3, 3, 2], 16, fused=False)


@case(rtol=1e-4, atol=1e-4)
def batch_norm_2d(tf):
    return _batch_norm_steps(tf, [6, 3], 17, epsilon=1e-2)


@case(rtol=1e-4, atol=1e-4)
def batch_norm_channels_first(tf):
    return _batch_norm_steps(tf, [3, 2, 3, 4], 18, axis=1)


@case(rtol=1e-4, atol=1e-4)
def batch_norm_no_center_no_scale_axis1_2d(tf):
    rng = np.random.RandomState(19)
    x = tf.placeholder(tf.float32, [5, 3, 2])
    y = tf.layers.batch_normalization(x, axis=1, center=False, scale=False, training=True)
    upd = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    xv = rng.randn(5, 3, 2).astype(F32)

    def run(sess):
        yv, _ = sess.run([y, upd], {x: xv})
        mm, mv = sess.run(tf.global_variables())
        return {"y": yv, "mm": mm, "mv": mv, "names": _names(tf.global_variables()),
                "trainable": _collection_names(tf, tf.GraphKeys.TRAINABLE_VARIABLES)}
    return run


@case(rtol=1e-4, atol=1e-4)
def batch_norm_training_placeholder(tf):
    rng = np.random.RandomState(20)
    x = tf.placeholder(tf.float32, [4, 2, 2, 3])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, training=training, momentum=0.5)
    z = tf.layers.batch_normalization(tf.reshape(x, [8, 6]), training=training, momentum=0.5)
    upd = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    xv = rng.randn(4, 2, 2, 3).astype(F32) + 2
    moving = [v for v in tf.global_variables() if "moving" in v.name]

    def run(sess):
        out = {}
        out["y_false"], out["z_false"], _ = sess.run([y, z, upd], {x: xv, training: False})
        out["moving_after_false"] = np.concatenate(sess.run(moving))
        out["y_true"], out["z_true"], _ = sess.run([y, z, upd], {x: xv, training: True})
        out["moving_after_true"] = np.concatenate(sess.run(moving))
        out["n_updates"] = len(upd)
        return out
    return run


@case(rtol=1e-4, atol=1e-4)
def training_tensor_conds_with_gradients(tf):
    """A fed ``training`` builds conds (TF's smart_cond): values and gradients through them
    for dropout (identity when False), fused and non-fused batch norm, both flag values."""
    rng = np.random.RandomState(21)
    x = tf.placeholder(tf.float32, [3, 2, 2, 4])
    training = tf.placeholder(tf.bool, [])
    y4 = tf.layers.batch_normalization(x, training=training, momentum=0.9)
    y2 = tf.layers.batch_normalization(tf.reshape(x, [6, 8]), training=training, momentum=0.9)
    d = tf.layers.dropout(y2, rate=0.5, training=tf.logical_and(training, False))
    w4, w2 = rng.randn(3, 2, 2, 4).astype(F32), rng.randn(6, 8).astype(F32)
    loss = tf.reduce_sum(y4 * w4) + tf.reduce_sum(d * w2)
    params = tf.trainable_variables()
    grads = tf.gradients(loss, [x] + params)
    upd = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving = [v for v in tf.global_variables() if "moving" in v.name]
    xv = rng.randn(3, 2, 2, 4).astype(F32) * 2 + 1

    def run(sess):
        out = {}
        for flag in (False, True):
            values = sess.run([loss, grads, upd], {x: xv, training: flag})
            out[f"loss_{flag}"] = values[0]
            for name, g in zip(["x"] + [v.op.name for v in params], values[1]):
                out[f"grad_{flag}_{name}"] = g
            out[f"moving_{flag}"] = np.concatenate(sess.run(moving))
        return out
    return run


@case(rtol=1e-4, atol=1e-5)
def custom_layer_subclass(tf):
    class Scale(tf.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", [int(input_shape[-1])],
                                     initializer=tf.constant_initializer([1.0, 2.0, 3.0]))
            self.c = self.add_variable("c", [], initializer=tf.zeros_initializer(),
                                       trainable=False)
            super(Scale, self).build(input_shape)

        def call(self, inputs):
            return inputs * self.w + self.c

    x = tf.placeholder(tf.float32, [None, 3])
    layer = Scale()
    y = layer.apply(x)
    y2 = layer(x * 2)
    other = Scale(name="other")
    y3 = other(x)
    return _fetch(tf, {"y": y, "y2": y2, "y3": y3, "names": _names(tf.global_variables()),
                       "trainable": _collection_names(tf, tf.GraphKeys.TRAINABLE_VARIABLES),
                       "layer_name": layer.name, "n_weights": len(layer.weights),
                       "n_trainable": len(layer.trainable_weights), "built": layer.built},
                  {x: np.arange(6, dtype=F32).reshape(2, 3)})


@case(rtol=2e-3, atol=2e-3)
def batch_norm_float16_inputs(tf):
    rng = np.random.RandomState(24)
    x4 = tf.placeholder(tf.float16, [4, 2, 2, 3])
    x2 = tf.placeholder(tf.float16, [6, 3])
    y4 = tf.layers.batch_normalization(x4, training=True)
    y2 = tf.layers.batch_normalization(x2, training=True)
    upd = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    feeds = {x4: rng.randn(4, 2, 2, 3).astype(np.float16), x2: rng.randn(6, 3).astype(np.float16)}

    def run(sess):
        a, b, _ = sess.run([y4, y2, upd], feeds)
        out = {"y4": a, "y2": b, "dtypes": np.asarray([v.dtype.base_dtype.name
                                                       for v in tf.global_variables()])}
        for v in tf.global_variables():
            out[v.op.name] = sess.run(v)
        return out
    return run


@case(rtol=1e-5, atol=1e-6)
def layer_regularizers_reach_tf_losses(tf):
    rng = np.random.RandomState(25)
    x = tf.placeholder(tf.float32, [None, 3])
    labels = tf.placeholder(tf.float32, [None, 2])
    h = tf.layers.dense(x, 4, activation=tf.nn.relu,
                        kernel_initializer=tf.constant_initializer(_init(rng, 3, 4)),
                        kernel_regularizer=lambda w: 0.01 * tf.nn.l2_loss(w))
    out = tf.layers.dense(h, 2, kernel_initializer=tf.constant_initializer(_init(rng, 4, 2)),
                          kernel_regularizer=lambda w: 0.1 * tf.reduce_sum(tf.abs(w)),
                          activity_regularizer=lambda a: 0.05 * tf.nn.l2_loss(a))
    tf.losses.mean_squared_error(labels, out)
    reg = tf.losses.get_regularization_loss()
    total = tf.losses.get_total_loss()
    grad = tf.gradients(total, tf.trainable_variables())
    feeds = {x: rng.randn(5, 3).astype(F32), labels: rng.randn(5, 2).astype(F32)}
    return _fetch(tf, {"reg": reg, "total": total, "g0": grad[0], "g2": grad[2],
                       "n_reg": len(tf.losses.get_regularization_losses())}, feeds)


@case(rtol=1e-5, atol=1e-6)
def initializers_and_regularizers_by_name(tf):
    rng = np.random.RandomState(26)
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.layers.dense(x, 2, kernel_initializer="ones", bias_initializer="zeros",
                        kernel_regularizer="l2", bias_regularizer="l1",
                        activity_regularizer="l1_l2")
    z = tf.layers.conv1d(tf.reshape(y, [-1, 2, 1]), 2, 2, kernel_initializer="Ones",
                         kernel_regularizer="l1_l2")
    g = tf.layers.dense(x, 4)  # the default glorot_uniform: only its range compares
    bound = np.sqrt(6.0 / (3 + 4))
    in_range = tf.reduce_all(tf.abs(tf.global_variables()[-2]) <= bound)
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    return _fetch(tf, {"y": y, "z": z, "losses": tf.stack(losses), "in_range": in_range,
                       "g_shape": np.asarray(g.shape.as_list()[1:])},
                  {x: rng.randn(4, 3).astype(F32)})
