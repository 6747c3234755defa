"""tf.train: learning-rate schedules, ExponentialMovingAverage and the optimizers' update
rules and slot names."""
import numpy as np

from tests.goldens.harness import case

STEPS = [0, 1, 4, 5, 9, 10, 11, 25, 40, 100]


def _schedule_values(tf, build):
    """{name: [rate at each of STEPS]} for schedules ``build(step) -> {name: tensor}``."""
    step = tf.placeholder(tf.int64, [], name="step")
    rates = build(step)

    def run(sess):
        per_step = [sess.run(rates, {step: s}) for s in STEPS]
        out = {k: np.array([v[k] for v in per_step]) for k in rates}
        # The name scope only: the op inside it is an implementation detail.
        out.update({f"{k}_scope": rates[k].op.name.split("/")[0] for k in rates})
        return out
    return run


@case
def exponential_natural_inverse_time_decay(tf):
    def build(step):
        return {
            "exp": tf.train.exponential_decay(0.1, step, 10, 0.5),
            "exp_staircase": tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=True),
            "natural": tf.train.natural_exp_decay(0.1, step, 10, 0.3),
            "natural_staircase": tf.train.natural_exp_decay(0.1, step, 10, 0.3, staircase=True),
            "inverse": tf.train.inverse_time_decay(0.1, step, 10, 0.5),
            "inverse_staircase": tf.train.inverse_time_decay(0.1, step, 10, 0.5, staircase=True),
            "exp_f64": tf.train.exponential_decay(np.float64(0.2), step, 7, 0.9, name="f64"),
        }
    return _schedule_values(tf, build)


@case
def piecewise_and_polynomial_decay(tf):
    def build(step):
        return {
            "piecewise": tf.train.piecewise_constant(step, [np.int64(5), np.int64(10)], [1.0, 0.5, 0.1]),
            "piecewise_int32_boundaries": tf.train.piecewise_constant(step, [4, 25], [3, 2, 1]),
            "poly": tf.train.polynomial_decay(0.1, step, 20),
            "poly_power": tf.train.polynomial_decay(0.1, step, 20, end_learning_rate=0.01, power=0.5),
            "poly_cycle": tf.train.polynomial_decay(0.1, step, 10, end_learning_rate=0.01, power=2.0,
                                                    cycle=True),
        }
    return _schedule_values(tf, build)


@case
def cosine_decays(tf):
    def build(step):
        return {
            "cosine": tf.train.cosine_decay(0.1, step, 20),
            "cosine_alpha": tf.train.cosine_decay(0.1, step, 20, alpha=0.1),
            "restarts": tf.train.cosine_decay_restarts(0.1, step, 4),
            "restarts_equal": tf.train.cosine_decay_restarts(0.1, step, 4, t_mul=1.0, m_mul=0.5,
                                                             alpha=0.05),
            "restarts_t3": tf.train.cosine_decay_restarts(0.1, step, 3, t_mul=3.0, m_mul=0.9),
            "linear_cosine": tf.train.linear_cosine_decay(0.1, step, 20),
            "linear_cosine_args": tf.train.linear_cosine_decay(0.1, step, 20, num_periods=2.0,
                                                               alpha=0.1, beta=0.01),
        }
    return _schedule_values(tf, build)


@case
def exponential_moving_average(tf):
    rng = np.random.RandomState(3)
    with tf.variable_scope("model"):
        w = tf.Variable(rng.randn(2, 3).astype(np.float32), name="w")
        b = tf.Variable(rng.randn(3).astype(np.float32), name="b")
    other = tf.Variable(1.0, name="other", trainable=False)
    step = tf.Variable(0, name="step", trainable=False)
    loss_like = tf.reduce_sum(w) * 2.0
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
    maintain = ema.apply([w, b, loss_like])
    fixed = tf.train.ExponentialMovingAverage(0.5, name="Fixed")
    maintain_fixed = fixed.apply([w])
    moves = [tf.assign_add(w, rng.randn(2, 3).astype(np.float32)),
             tf.assign_sub(b, rng.randn(3).astype(np.float32)), tf.assign_add(step, 1)]
    restore = ema.variables_to_restore()

    def run(sess):
        values = {}
        for i in range(3):
            sess.run(moves)
            sess.run([maintain, maintain_fixed])
            values[f"w_avg_{i}"] = sess.run(ema.average(w))
            values[f"b_avg_{i}"] = sess.run(ema.average(b))
            values[f"loss_avg_{i}"] = sess.run(ema.average(loss_like))
            values[f"w_fixed_{i}"] = sess.run(fixed.average(w))
        values["names"] = [ema.average(w).op.name, ema.average(b).op.name,
                           ema.average(loss_like).op.name, fixed.average(w).op.name]
        values["average_names"] = [ema.average_name(w), ema.average_name(other)]
        values["restore_keys"] = sorted(restore)
        values["restore_targets"] = [restore[k].op.name for k in sorted(restore)]
        values["moving_average_variables"] = sorted(v.op.name for v in tf.moving_average_variables())
        values["global_variables"] = sorted(v.op.name for v in tf.global_variables())
        return values
    return run


# -- optimizers: three steps from fixed values with fixed gradients ----------------------
def _optimizer_run(tf, make_optimizer, steps=3, dtype=np.float32):
    rng = np.random.RandomState(7)
    a = tf.Variable(rng.randn(3, 2).astype(dtype), name="a")
    with tf.variable_scope("layer"):
        b = tf.Variable(rng.randn(2).astype(dtype), name="b")
    grads = [tf.constant(rng.randn(*shape).astype(dtype)) for shape in ((3, 2), (2,))]
    global_step = tf.train.get_or_create_global_step()
    opt = make_optimizer(global_step)
    train = opt.apply_gradients(list(zip(grads, [a, b])), global_step=global_step)

    def run(sess):
        values = {}
        for i in range(steps):
            sess.run(train)
            values[f"a_{i}"], values[f"b_{i}"] = sess.run([a, b])
        names = opt.get_slot_names()
        values["slot_names"] = names if names else ["<none>"]
        slots = [opt.get_slot(v, n) for v in (a, b) for n in names]
        values["slot_variables"] = [s.op.name for s in slots] if slots else ["<none>"]
        for s in slots:
            values["slot/" + s.op.name] = sess.run(s)
        values["global_step"] = sess.run(global_step)
        values["variables"] = sorted(v.op.name for v in tf.global_variables())
        return values
    return run


@case
def gradient_descent_with_a_decayed_rate(tf):
    def make(step):
        lr = tf.train.exponential_decay(0.1, step, 2, 0.5, staircase=True)
        return tf.train.GradientDescentOptimizer(lr)
    return _optimizer_run(tf, make)


@case
def momentum(tf):
    return _optimizer_run(tf, lambda step: tf.train.MomentumOptimizer(0.05, 0.9))


@case
def rmsprop_defaults(tf):
    return _optimizer_run(tf, lambda step: tf.train.RMSPropOptimizer(0.01))


@case
def momentum_nesterov(tf):
    return _optimizer_run(tf, lambda step: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True))


@case
def rmsprop_momentum_centered(tf):
    return _optimizer_run(tf, lambda step: tf.train.RMSPropOptimizer(
        0.01, decay=0.8, momentum=0.5, epsilon=1e-6, centered=True))


@case
def adadelta(tf):
    return _optimizer_run(tf, lambda step: tf.train.AdadeltaOptimizer(0.5, rho=0.9, epsilon=1e-6))


@case
def adadelta_defaults(tf):
    return _optimizer_run(tf, lambda step: tf.train.AdadeltaOptimizer())


@case
def adagrad_da(tf):
    return _optimizer_run(tf, lambda step: tf.train.AdagradDAOptimizer(0.1, step))


@case
def adagrad_da_l1_l2(tf):
    return _optimizer_run(tf, lambda step: tf.train.AdagradDAOptimizer(
        0.1, step, initial_gradient_squared_accumulator_value=0.2, l1_regularization_strength=0.05,
        l2_regularization_strength=0.1))


@case
def ftrl(tf):
    return _optimizer_run(tf, lambda step: tf.train.FtrlOptimizer(0.1))


@case
def ftrl_l1_l2_power(tf):
    return _optimizer_run(tf, lambda step: tf.train.FtrlOptimizer(
        0.2, learning_rate_power=-0.7, initial_accumulator_value=0.3,
        l1_regularization_strength=0.01, l2_regularization_strength=0.2))


@case
def ftrl_shrinkage_and_slot_names(tf):
    return _optimizer_run(tf, lambda step: tf.train.FtrlOptimizer(
        0.1, l1_regularization_strength=0.001, l2_regularization_strength=0.05,
        l2_shrinkage_regularization_strength=0.1, accum_name="acc", linear_name="lin"))


@case
def proximal_gradient_descent(tf):
    return _optimizer_run(tf, lambda step: tf.train.ProximalGradientDescentOptimizer(0.3))


@case
def proximal_gradient_descent_l1_l2(tf):
    return _optimizer_run(tf, lambda step: tf.train.ProximalGradientDescentOptimizer(
        0.3, l1_regularization_strength=0.2, l2_regularization_strength=0.1))


@case
def proximal_adagrad(tf):
    return _optimizer_run(tf, lambda step: tf.train.ProximalAdagradOptimizer(0.2))


@case
def proximal_adagrad_l1_l2(tf):
    return _optimizer_run(tf, lambda step: tf.train.ProximalAdagradOptimizer(
        0.2, initial_accumulator_value=0.5, l1_regularization_strength=0.1,
        l2_regularization_strength=0.05))


@case
def adadelta_float64(tf):
    return _optimizer_run(tf, lambda step: tf.train.AdadeltaOptimizer(1.0), dtype=np.float64)


@case
def init_from_checkpoint_maps_names_scopes_and_variables(tf):
    import tempfile

    rng = np.random.RandomState(11)
    with tf.variable_scope("pretrained"):
        old_w = tf.get_variable("w", initializer=rng.randn(3, 2).astype(np.float32))
        old_b = tf.get_variable("b", initializer=rng.randn(2).astype(np.float32))
        tf.get_variable("unused", initializer=np.float32(5.0))
    with tf.variable_scope("head"):
        old_h = tf.get_variable("h", initializer=rng.randn(4).astype(np.float32))
    with tf.variable_scope("model"):
        new_w = tf.get_variable("w", [3, 2])
        new_b = tf.get_variable("b", [2])
    new_h = tf.get_variable("renamed_h", [4])
    plain = tf.Variable(tf.zeros([2]), name="plain")
    saver = tf.train.Saver([old_w, old_b, old_h])
    ckpt_dir = tempfile.mkdtemp()

    def run(sess):
        saver.save(sess, ckpt_dir + "/model.ckpt", global_step=1)
        tf.train.init_from_checkpoint(ckpt_dir, {"pretrained/": "model/", "head/h": "renamed_h",
                                                 "pretrained/b": plain})
        sess.run([v.initializer for v in (new_w, new_b, new_h, plain)])
        return {"w": sess.run(new_w), "b": sess.run(new_b), "h": sess.run(new_h),
                "plain": sess.run(plain)}
    return run


@case
def ema_after_the_train_op_under_control_dependencies(tf):
    """TF's documented pattern: the shadows average the values the train op just wrote."""
    w = tf.Variable(np.array([1.0, -2.0], np.float32), name="w")
    loss = tf.reduce_sum(tf.square(w))
    train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
    ema = tf.train.ExponentialMovingAverage(0.5)
    with tf.control_dependencies([train]):
        train_and_average = ema.apply([w])

    def run(sess):
        values = {}
        for i in range(3):
            sess.run(train_and_average)
            values[f"w_{i}"], values[f"avg_{i}"] = sess.run([w, ema.average(w)])
        return values
    return run
