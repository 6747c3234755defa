"""W9: control flow, written once against a ``tf`` module like the other in-process
workloads (bench/workloads.py): a while_loop's per-iteration overhead and one training step
of an LSTM language model built with dynamic_rnn."""
from __future__ import annotations

import statistics
import time

import numpy as np

LOOP_ITERATIONS = 1000
# The LSTM language model of the benchmark: 2 layers of 256 units, 35 steps, batch 20,
# a vocabulary of 10,000 words and a full softmax (TF's PTB "small" model, wider).
LSTM = {"layers": 2, "units": 256, "steps": 35, "batch": 20, "vocab": 10_000}


def rnn_modules(tf):
    """(cells, drivers): tf.nn.rnn_cell and tf.nn; TensorFlow 2.x without tf_keras keeps
    the same TF 1.x cells and drivers in its legacy modules."""
    if not tf.__name__.startswith("tensorflow"):
        return tf.nn.rnn_cell, tf.nn
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl
    from tensorflow.python.ops import rnn

    return rnn_cell_impl, rnn


def _best(fn, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out), statistics.median(out)


def setup_while_loop(tf, env):
    """Per-iteration cost of a scalar while_loop: (1,000 iterations - 1 iteration) / 999."""
    g = tf.Graph()
    with g.as_default():
        def loop(n):
            return tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + 1.0),
                                 [tf.constant(0), tf.constant(0.0)])
        big, small = loop(LOOP_ITERATIONS), loop(1)
    sess = env.session(g)
    for _ in range(3):
        sess.run(big)
        sess.run(small)

    def measure(quick):
        # Best of each, then the difference: a difference per pair swings below zero when
        # the machine is busy.
        reps = 5 if quick else 15
        tb = _best(lambda: sess.run(big), reps)[0]
        ts = _best(lambda: sess.run(small), reps)[0]
        return {"w9.while_iteration_us": (tb - ts) / (LOOP_ITERATIONS - 1) * 1e6}

    return measure


def build_lstm_lm(tf, cfg=LSTM, seed=0):
    """The model's graph in the default graph: (train_op, loss, feed dict)."""
    rnn_cell, nn = rnn_modules(tf)
    rng = np.random.RandomState(seed)
    words = tf.placeholder(tf.int32, [cfg["batch"], cfg["steps"]])
    targets = tf.placeholder(tf.int32, [cfg["batch"], cfg["steps"]])
    init = tf.random_uniform_initializer(-0.1, 0.1)
    with tf.variable_scope("lm", initializer=init):
        embedding = tf.get_variable("embedding", [cfg["vocab"], cfg["units"]])
        inputs = tf.gather(embedding, words)  # embedding_lookup of one unsharded table
        cell = rnn_cell.MultiRNNCell([rnn_cell.BasicLSTMCell(cfg["units"])
                                      for _ in range(cfg["layers"])])
        outputs, _ = nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
        flat = tf.reshape(outputs, [-1, cfg["units"]])
        softmax_w = tf.get_variable("softmax_w", [cfg["units"], cfg["vocab"]])
        softmax_b = tf.get_variable("softmax_b", [cfg["vocab"]])
        logits = tf.matmul(flat, softmax_w) + softmax_b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(targets, [-1]), logits=logits))
    train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
    feed = {words: rng.randint(0, cfg["vocab"], (cfg["batch"], cfg["steps"])),
            targets: rng.randint(0, cfg["vocab"], (cfg["batch"], cfg["steps"]))}
    return train, loss, feed


def setup_lstm_step(tf, env):
    g = tf.Graph()
    with g.as_default():
        train, _, feed = build_lstm_lm(tf)
        init = tf.global_variables_initializer()
    sess = env.session(g)
    sess.run(init)
    step = lambda: sess.run(train, feed)  # noqa: E731
    for _ in range(3):
        step()

    def measure(quick):
        return {"w9.lstm_step_ms": _best(step, 3 if quick else 6)[1] * 1e3}

    return measure


def setup_control_flow(tf, env):
    """W9: both figures, one round each."""
    loop, lstm = setup_while_loop(tf, env), setup_lstm_step(tf, env)

    def measure(quick):
        return {**loop(quick), **lstm(quick)}

    return measure
