"""Trains a 64-128-10 MLP on the 8x8 digits in one process and reports test accuracy.

    python examples/mlp_digits.py [--steps 2000]
"""
import argparse
import os

import numpy as np

import dtf as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def load_digits(seed=0):
    data = np.load(os.path.join(HERE, "data", "digits.npz"))
    x = data["images"].astype(np.float32) / 16.0
    y = data["labels"].astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    x, y = x[order], y[order]
    n_test = 360
    return (x[n_test:], y[n_test:]), (x[:n_test], y[:n_test])


def build_mlp(hidden=128, learning_rate=0.1):
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    with tf.variable_scope("hidden"):
        w1 = tf.get_variable("w", [64, hidden], initializer=tf.glorot_uniform_initializer(seed=1))
        b1 = tf.get_variable("b", [hidden], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
    with tf.variable_scope("logits"):
        w2 = tf.get_variable("w", [hidden, 10], initializer=tf.glorot_uniform_initializer(seed=2))
        b2 = tf.get_variable("b", [10], initializer=tf.zeros_initializer())
        logits = tf.matmul(h, w2) + b2
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(loss, global_step=global_step)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return x, y, loss, train_op, accuracy


def main(steps=2000, batch=64):
    (train_x, train_y), (test_x, test_y) = load_digits()
    x, y, loss, train_op, accuracy = build_mlp()
    rng = np.random.default_rng(1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, steps + 1):
            idx = rng.integers(0, len(train_x), batch)
            l, _ = sess.run([loss, train_op], {x: train_x[idx], y: train_y[idx]})
            if step % 500 == 0:
                print(f"step {step}: loss {l:.4f}")
        acc = sess.run(accuracy, {x: test_x, y: test_y})
    print(f"test accuracy: {acc:.4f}")
    return acc


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=2000)
    main(p.parse_args().steps)
