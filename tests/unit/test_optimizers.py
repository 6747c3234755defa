import numpy as np
import pytest

import dtf as tf

W0 = np.array([[1.0, -2.0], [0.5, 3.0]])
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]])


def _grad(w):
    """d/dw of sum((X @ w)**2)."""
    return 2.0 * X.T @ (X @ w)


# numpy re-implementations of TF's update formulas: state -> (new w, new state)
def _sgd(w, s, lr=0.05):
    return w - lr * _grad(w), s


def _momentum(w, s, lr=0.05, mu=0.9, nesterov=False):
    g = _grad(w)
    acc = s.get("acc", np.zeros_like(w)) * mu + g
    w = w - (g * lr + acc * mu * lr if nesterov else lr * acc)
    return w, {"acc": acc}


def _adam(w, s, lr=0.1, b1=0.9, b2=0.999, eps=1e-8):
    g = _grad(w)
    t = s.get("t", 0) + 1
    m = s.get("m", 0) + (g - s.get("m", 0)) * (1 - b1)
    v = s.get("v", 0) + (g * g - s.get("v", 0)) * (1 - b2)
    lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return w - m * lr_t / (np.sqrt(v) + eps), {"t": t, "m": m, "v": v}


def _adagrad(w, s, lr=0.1, init=0.1):
    g = _grad(w)
    acc = s.get("acc", np.full_like(w, init)) + g * g
    return w - lr * g / np.sqrt(acc), {"acc": acc}


def _rmsprop(w, s, lr=0.01, rho=0.9, mu=0.5, eps=1e-10, centered=False):
    g = _grad(w)
    ms = s.get("ms", np.ones_like(w))
    ms = ms + (g * g - ms) * (1 - rho)
    mg = s.get("mg", np.zeros_like(w)) + (g - s.get("mg", np.zeros_like(w))) * (1 - rho)
    denom = ms - mg * mg if centered else ms
    mom = s.get("mom", np.zeros_like(w)) * mu + lr * g / np.sqrt(denom + eps)
    return w - mom, {"ms": ms, "mg": mg, "mom": mom}


CASES = [
    ("sgd", lambda: tf.train.GradientDescentOptimizer(0.05), _sgd),
    ("momentum", lambda: tf.train.MomentumOptimizer(0.05, 0.9), _momentum),
    ("nesterov", lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
     lambda w, s: _momentum(w, s, nesterov=True)),
    ("adam", lambda: tf.train.AdamOptimizer(0.1), _adam),
    ("adagrad", lambda: tf.train.AdagradOptimizer(0.1), _adagrad),
    ("rmsprop", lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5), _rmsprop),
    ("centered_rmsprop", lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5, centered=True),
     lambda w, s: _rmsprop(w, s, centered=True)),
]


@pytest.mark.parametrize("name,make,reference", CASES, ids=[c[0] for c in CASES])
def test_update_matches_numpy_for_three_steps(name, make, reference):
    w = tf.Variable(W0, name="w")  # float64
    loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(X), w)))
    train = make().minimize(loss)
    want, state = W0, {}
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(3):
            s.run(train)
            want, state = reference(want, state)
            np.testing.assert_allclose(s.run(w), want, rtol=1e-5, atol=1e-9)  # float32 hyperparameters, as TF


def test_minimize_with_global_step_and_op_names():
    w = tf.Variable([1.0, 2.0], name="w")
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(w * w), global_step=gs)
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert "GradientDescent/update_w/ApplyGradientDescent" in names
    assert train.name == "GradientDescent" and train.type == "AssignAdd"
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        for _ in range(3):
            s.run(train)
        assert s.run(gs) == 3
        np.testing.assert_allclose(s.run(w), [0.0, 0.0])


def test_slots_names_colocation_and_variables():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([2]), name="w")
    b = tf.Variable(0.0, name="b")
    opt = tf.train.AdamOptimizer()
    opt.minimize(tf.reduce_sum(w) + b)
    assert opt.get_slot_names() == ["m", "v"]
    m = opt.get_slot(w, "m")
    assert m.name == "w/Adam:0" and opt.get_slot(w, "v").name == "w/Adam_1:0"
    assert m.device == w.device == "/job:ps/task:0" and m not in tf.trainable_variables()
    assert [v.name for v in opt.variables()] == [
        "b/Adam:0", "b/Adam_1:0", "beta1_power:0", "beta2_power:0", "w/Adam:0", "w/Adam_1:0"]
    assert opt.get_slot(w, "nope") is None
    rms = tf.train.RMSPropOptimizer(0.1)
    rms.minimize(tf.reduce_sum(w))
    assert rms.get_slot(w, "rms").name == "w/RMSProp:0"
    assert rms.get_slot(w, "momentum").name == "w/RMSProp_1:0"


def test_var_list_and_compute_gradients():
    a = tf.Variable(1.0, name="a")
    b = tf.Variable(1.0, name="b")
    loss = 3.0 * a + 5.0 * b
    opt = tf.train.GradientDescentOptimizer(1.0)
    gv = opt.compute_gradients(loss, var_list=[a])
    assert [v for _, v in gv] == [a]
    train = opt.apply_gradients(gv)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(train)
        assert s.run([a, b]) == [-2.0, 1.0]


def test_optimizer_errors():
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No variables to optimize."):
        opt.minimize(tf.constant(1.0) * 2.0)
    a = tf.Variable(1.0)
    tf.Variable(2.0, name="unused")
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.minimize(tf.constant(2.0) * 3.0, var_list=[a])
    with pytest.raises(ValueError, match="Invalid type"):
        opt.minimize(tf.constant(2) * 3)
    with pytest.raises(ValueError, match="Must specify the optimizer name"):
        tf.train.Optimizer(False, "")


def test_concurrent_updates_are_not_lost():
    import threading

    v = tf.Variable(0.0)
    inc = v.assign_add(1.0)
    with tf.Session() as s:
        s.run(v.initializer)

        def work():
            for _ in range(200):
                s.run(inc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert s.run(v) == 800.0
