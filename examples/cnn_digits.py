"""A small CNN (conv2d + max_pool) on the 8x8 digits; prints the loss as it falls.

    python examples/cnn_digits.py [--steps 300]
"""
import argparse

import numpy as np

import dtf as tf
from mlp_digits import load_digits


def build_cnn(learning_rate=0.05):
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    images = tf.reshape(x, [-1, 8, 8, 1])
    with tf.variable_scope("conv1"):
        k = tf.get_variable("kernel", [3, 3, 1, 16], initializer=tf.glorot_uniform_initializer(seed=3))
        b = tf.get_variable("bias", [16], initializer=tf.zeros_initializer())
        conv = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(images, k, [1, 1, 1, 1], "SAME"), b))
        pool = tf.nn.max_pool(conv, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")  # 4x4x16
    with tf.variable_scope("logits"):
        flat = tf.reshape(pool, [-1, 4 * 4 * 16])
        w = tf.get_variable("w", [256, 10], initializer=tf.glorot_uniform_initializer(seed=4))
        logits = tf.matmul(flat, w)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf.train.AdamOptimizer(learning_rate / 10).minimize(loss)
    return x, y, loss, train_op


def main(steps=300, batch=64):
    (train_x, train_y), _ = load_digits()
    x, y, loss, train_op = build_cnn()
    rng = np.random.default_rng(2)
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, steps + 1):
            idx = rng.integers(0, len(train_x), batch)
            l, _ = sess.run([loss, train_op], {x: train_x[idx], y: train_y[idx]})
            losses.append(l)
            if step % 50 == 0:
                print(f"step {step}: loss {np.mean(losses[-50:]):.4f}")
    return losses


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    main(p.parse_args().steps)
