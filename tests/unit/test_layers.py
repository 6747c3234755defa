"""tf.layers beyond the TF goldens (tests/goldens/cases_layers.py): argument errors, the
trainable flag, dtypes, dynamic training flags, training with UPDATE_OPS and checkpoints."""
import os

import numpy as np
import pytest

import dtf as tf


def _check_input_gradient(build, x_value, delta=1e-4):
    """d sum(build(x)) / dx against central differences, variables initialized once."""
    x = tf.placeholder(tf.float64, x_value.shape)
    y = tf.reduce_sum(build(x))
    grad = tf.gradients(y, x)[0]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sym = sess.run(grad, {x: x_value})
        num = np.zeros_like(x_value)
        for idx in np.ndindex(*x_value.shape):
            plus, minus = x_value.copy(), x_value.copy()
            plus[idx] += delta
            minus[idx] -= delta
            num[idx] = (sess.run(y, {x: plus}) - sess.run(y, {x: minus})) / (2 * delta)
    np.testing.assert_allclose(sym, num, rtol=1e-4, atol=1e-5)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_bad_arguments_name_the_argument():
    x4 = tf.placeholder(tf.float32, [None, 5, 5, 2])
    with pytest.raises(ValueError, match="`padding` argument"):
        tf.layers.conv2d(x4, 2, 3, padding="full")
    with pytest.raises(ValueError, match="`kernel_size` argument must be a tuple of 2"):
        tf.layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="`data_format` argument"):
        tf.layers.Conv2D(2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match="data_format='channels_first' is not supported"):
        tf.layers.max_pooling2d(x4, 2, 2, data_format="channels_first")
    with pytest.raises(ValueError, match="last dimension of the inputs to `Dense`"):
        tf.layers.dense(tf.placeholder(tf.float32, [None, None]), 3)
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, None]), 2, 3)
    with pytest.raises(ValueError, match="expected ndim=4"):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5, 2]), 2, 3)
    with pytest.raises(NotImplementedError, match="renorm"):
        tf.layers.batch_normalization(x4, renorm=True)
    with pytest.raises(ValueError, match="Unknown activation function: swishy"):
        tf.layers.Dense(2, activation="swishy")
    with pytest.raises(TypeError, match="not understood"):
        tf.layers.Dense(2, kernel_size=3)
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(x4, 2, name="d")
        tf.layers.dense(x4, 2, name="d")


def test_padding_is_case_insensitive_and_activation_names_resolve():
    x = tf.placeholder(tf.float32, [None, 6, 6, 2])
    assert tf.layers.conv2d(x, 2, 3, padding="SaMe").shape.as_list() == [None, 6, 6, 2]
    y = tf.layers.dense(tf.constant([[-1.0, 2.0]]), 2, activation="relu",
                        kernel_initializer=tf.constant_initializer(np.eye(2)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [[0.0, 2.0]])


def test_untrainable_layer_keeps_its_variables_out_of_training():
    x = tf.placeholder(tf.float32, [None, 3])
    layer = tf.layers.Dense(2, trainable=False)
    layer(x)
    assert tf.trainable_variables() == []
    assert [v.op.name for v in tf.global_variables()] == ["dense/kernel", "dense/bias"]
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2


def test_float64_inputs_make_float64_variables_and_gradients_check():
    kernel = np.random.RandomState(1).randn(2, 3, 4)
    layer = tf.layers.Conv1D(4, 2, padding="same", activation=tf.nn.tanh,
                             kernel_initializer=tf.constant_initializer(kernel))
    _check_input_gradient(layer, np.random.RandomState(0).randn(2, 5, 3))
    assert [v.dtype.base_dtype for v in layer.variables] == [tf.float64, tf.float64]


def test_dropout_with_a_training_tensor_drops_only_when_true():
    x = tf.ones([50, 40])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.25, training=training)
    with tf.Session() as sess:
        off, on = sess.run(y, {training: False}), sess.run(y, {training: True})
    np.testing.assert_array_equal(off, np.ones([50, 40]))
    assert set(np.unique(on)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.15 < np.mean(on == 0) < 0.35


def test_batch_norm_trains_with_update_ops_and_checkpoints_by_tf_names(tmp_path):
    rng = np.random.RandomState(2)
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    labels = tf.placeholder(tf.float32, [None, 2])
    training = tf.placeholder_with_default(True, [])
    h = tf.layers.conv2d(x, 4, 3, padding="same", use_bias=False)
    h = tf.nn.relu(tf.layers.batch_normalization(h, training=training))
    logits = tf.layers.dense(tf.layers.flatten(h), 2)
    loss = tf.reduce_mean(tf.square(logits - labels))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    saver = tf.train.Saver()
    xv, yv = rng.randn(8, 4, 4, 3).astype(np.float32) + 3, rng.randn(8, 2).astype(np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: xv, labels: yv})
        for _ in range(30):
            sess.run(train, {x: xv, labels: yv})
        assert sess.run(loss, {x: xv, labels: yv}) < first
        mm = sess.run("batch_normalization/moving_mean:0")
        assert np.all(mm != 0)  # the moving mean moved towards the batch mean
        path = saver.save(sess, os.path.join(str(tmp_path), "model"))
    names = [name for name, _ in tf.train.list_variables(path)]
    assert {"conv2d/kernel", "batch_normalization/gamma", "batch_normalization/beta",
            "batch_normalization/moving_mean", "batch_normalization/moving_variance",
            "dense/kernel", "dense/bias"} <= set(names)


def test_layer_properties_and_scope_name():
    layer = tf.layers.Conv2D(2, 3, name="conv")
    with pytest.raises(ValueError, match="has not been used yet"):
        layer.scope_name
    layer(tf.placeholder(tf.float32, [1, 5, 5, 1]))
    assert layer.scope_name == "conv" and layer.name == "conv" and layer.built
    assert [v.op.name for v in layer.variables] == ["conv/kernel", "conv/bias"]
    assert layer.dtype == "float32"


def test_separable_and_transposed_layers_have_gradients():
    rng = np.random.RandomState(3)
    sep = tf.layers.SeparableConv2D(
        3, 2, padding="same", depthwise_initializer=tf.constant_initializer(rng.randn(2, 2, 2, 1)),
        pointwise_initializer=tf.constant_initializer(rng.randn(1, 1, 2, 3)))
    _check_input_gradient(sep, rng.randn(1, 3, 3, 2))
    tconv = tf.layers.Conv2DTranspose(2, 3, strides=2, kernel_initializer=tf.constant_initializer(
        rng.randn(3, 3, 2, 2)))
    _check_input_gradient(tconv, rng.randn(1, 3, 3, 2))


def test_input_spec_is_checked_on_every_call():
    class Square(tf.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.input_spec = tf.layers.InputSpec(ndim=2, axes={-1: 3}, dtype=tf.float32)

        def call(self, inputs):
            return inputs * inputs

    layer = Square()
    layer(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="layer square_1 is incompatible with the layer: expected "
                                         "axis -1 of input shape to have value 3"):
        layer(tf.placeholder(tf.float32, [None, 4]))
    with pytest.raises(ValueError, match="expected dtype=float32, found dtype=float64"):
        layer(tf.placeholder(tf.float64, [None, 3]))
    with pytest.raises(ValueError, match="its rank is undefined"):
        tf.layers.dense(tf.placeholder(tf.float32), 2)
    dense = tf.layers.Dense(2)
    dense(tf.placeholder(tf.float32, [None, 3]))
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 3"):
        dense(tf.placeholder(tf.float32, [None, 5]))


def test_layers_take_several_inputs_and_ignore_a_training_flag_they_lack():
    class Sum(tf.layers.Layer):
        def build(self, input_shapes):
            self.shapes = [s.as_list() for s in input_shapes]
            super().build(input_shapes)

        def call(self, inputs, scope=None):
            self.scope_seen = scope.name
            return inputs[0] + inputs[1]

    layer = Sum()
    out = layer([tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])])
    assert layer.shapes == [[2], [2]] and layer.scope_seen == "sum"
    y = tf.layers.Dense(1, kernel_initializer=tf.ones_initializer())(
        tf.reshape(out, [1, 2]), training=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), [[10.0]])


def test_unknown_initializer_or_regularizer_names_are_refused():
    x = tf.placeholder(tf.float32, [None, 3])
    with pytest.raises(ValueError, match="Unknown initializer: he_normal"):
        tf.layers.dense(x, 2, kernel_initializer="he_normal")
    with pytest.raises(ValueError, match="Unknown regularizer: l3"):
        tf.layers.dense(x, 2, kernel_regularizer="l3")
