"""Learning-rate schedules, ExponentialMovingAverage, the extra optimizers and
init_from_checkpoint: their errors and end-to-end use (values against TF are in
tests/goldens/cases_train.py)."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf


# -- schedules ---------------------------------------------------------------------------
@pytest.mark.parametrize("schedule", ["exponential_decay", "natural_exp_decay",
                                      "inverse_time_decay"])
def test_decays_need_a_global_step(schedule):
    with pytest.raises(ValueError, match=f"global_step is required for {schedule}"):
        getattr(tf.train, schedule)(0.1, None, 10, 0.5)


def test_polynomial_and_cosine_decays_need_a_global_step():
    with pytest.raises(ValueError, match="global_step is required for polynomial_decay"):
        tf.train.polynomial_decay(0.1, None, 10)
    with pytest.raises(ValueError, match="global_step is required for cosine_decay"):
        tf.train.cosine_decay(0.1, None, 10)


def test_piecewise_constant_checks_lengths_and_dtypes():
    x = tf.constant(3, tf.int64)
    with pytest.raises(ValueError, match="1 less than the length of values"):
        tf.train.piecewise_constant(x, [1, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="same dtype as x"):
        tf.train.piecewise_constant(x, [1.5], [0.1, 0.2])
    with pytest.raises(ValueError, match="same dtype"):
        tf.train.piecewise_constant(x, [1], [0.1, 2])


def test_a_decayed_rate_drives_an_optimizer_as_the_step_grows():
    step = tf.train.get_or_create_global_step()
    v = tf.Variable(0.0)
    lr = tf.train.exponential_decay(1.0, step, 1, 0.5, staircase=True)
    train = tf.train.GradientDescentOptimizer(lr).minimize(-v, global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(v) == pytest.approx(1.0 + 0.5 + 0.25)
        assert sess.run(lr) == pytest.approx(0.125)


# -- ExponentialMovingAverage ------------------------------------------------------------
def test_ema_refuses_zero_debias_integers_and_repeats():
    with pytest.raises(NotImplementedError, match="zero_debias"):
        tf.train.ExponentialMovingAverage(0.9, zero_debias=True)
    ema = tf.train.ExponentialMovingAverage(0.9)
    with pytest.raises(TypeError, match="half, float, or double"):
        ema.apply([tf.Variable(1, name="count")])
    v = tf.Variable(1.0, name="v")
    ema.apply([v])
    with pytest.raises(ValueError, match="Moving average already computed for: v:0"):
        ema.apply([v])
    assert ema.average(tf.Variable(2.0, name="w")) is None
    assert ema.name == "ExponentialMovingAverage"


def test_ema_shadows_restore_into_an_evaluation_graph(tmp_path):
    v = tf.Variable(10.0, name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    maintain = ema.apply()
    move = tf.assign_add(v, 4.0)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(move)
            sess.run(maintain)
        # 10 -> 14 -> 18; shadow 10 -> 12 -> 15
        assert sess.run([v, ema.average(v)]) == [18.0, 15.0]
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    tf.reset_default_graph()
    v = tf.Variable(0.0, name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    restore = ema.variables_to_restore()
    assert restore == {"v/ExponentialMovingAverage": v}
    with tf.Session() as sess:
        tf.train.Saver(restore).restore(sess, path)
        assert sess.run(v) == 15.0


# -- optimizers --------------------------------------------------------------------------
def test_optimizer_arguments_are_checked_as_in_tf():
    with pytest.raises(ValueError, match="learning_rate_power 0.500000 needs to be negative"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="initial_accumulator_value -1.000000 needs to be positive"):
        tf.train.FtrlOptimizer(0.1, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="l1_regularization_strength -0.100000"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-0.1)
    with pytest.raises(ValueError, match="l2_shrinkage_regularization_strength"):
        tf.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=-1.0)
    step = tf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="initial_gradient_squared_accumulator_value must be positive"):
        tf.train.AdagradDAOptimizer(0.1, step, initial_gradient_squared_accumulator_value=0.0)
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)


@pytest.mark.parametrize("make", [
    lambda step: tf.train.AdadeltaOptimizer(1.0, epsilon=1e-2),
    lambda step: tf.train.AdagradDAOptimizer(0.5, step),
    lambda step: tf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.001),
    lambda step: tf.train.FtrlOptimizer(0.5, l2_shrinkage_regularization_strength=0.01),
    lambda step: tf.train.ProximalGradientDescentOptimizer(0.1, l2_regularization_strength=0.01),
    lambda step: tf.train.ProximalAdagradOptimizer(0.5, l1_regularization_strength=0.001),
], ids=["adadelta", "adagrad_da", "ftrl", "ftrl_v2", "proximal_gd", "proximal_adagrad"])
def test_each_optimizer_minimizes_a_least_squares_loss(make):
    rng = np.random.RandomState(0)
    xs = rng.randn(32, 3).astype(np.float32)
    x = tf.constant(xs)
    y = tf.constant(xs @ np.array([[1.0], [-2.0], [0.5]], np.float32))
    w = tf.Variable(tf.zeros([3, 1]), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    step = tf.train.get_or_create_global_step()
    train = make(step).minimize(loss, global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(30):
            sess.run(train)
        assert sess.run(loss) < 0.8 * first
        assert sess.run(step) == 30


def test_new_apply_ops_check_shapes_and_are_not_differentiable():
    from dtf.ops import state_ops

    v = tf.Variable(tf.zeros([2]), name="v")
    acc = tf.Variable(tf.zeros([2]), name="acc")
    with pytest.raises(ValueError, match="ApplyProximalAdagrad: var and .* do not have the same shape"):
        state_ops.apply_proximal_adagrad(v, acc, 0.1, 0.0, 0.0, tf.zeros([3]))
    grad = tf.ones([2])
    out = state_ops.apply_proximal_adagrad(v, acc, 0.1, 0.0, 0.0, grad)
    assert tf.gradients(out, [grad]) == [None]


# -- init_from_checkpoint ----------------------------------------------------------------
def _checkpoint(tmp_path):
    with tf.Graph().as_default():
        with tf.variable_scope("old"):
            tf.get_variable("w", initializer=np.ones([2, 2], np.float32))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return saver.save(sess, str(tmp_path / "model.ckpt"))


def test_init_from_checkpoint_initializes_and_keeps_later_training(tmp_path):
    path = _checkpoint(tmp_path)
    with tf.variable_scope("new"):
        w = tf.get_variable("w", [2, 2])
    tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/"})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w), np.ones([2, 2]))
        sess.run(w.assign_add(np.ones([2, 2], np.float32)))
        np.testing.assert_array_equal(sess.run(w), 2 * np.ones([2, 2]))
    assert path.endswith("model.ckpt")


def test_init_from_checkpoint_errors_name_what_is_wrong(tmp_path):
    _checkpoint(tmp_path)
    with tf.variable_scope("new"):
        tf.get_variable("w", [2, 2])
        tf.get_variable("wide", [3, 2])
    with pytest.raises(ValueError, match="Tensor old/missing is not found in"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/missing": "new/w"})
    with pytest.raises(ValueError, match=r"Shape of variable new/wide:0 \(\(3, 2\)\) doesn't match"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/w": "new/wide"})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/w": "new/"})
    with pytest.raises(ValueError, match="Tensor old/wide .* is not found"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/"})
    with pytest.raises(NotImplementedError, match="partitioned"):
        tf.train.init_from_checkpoint(str(tmp_path), {"old/w": [tf.Variable(1.0)]})
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.init_from_checkpoint(str(tmp_path / "empty"), {"old/": "new/"})
