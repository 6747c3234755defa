"""A CNN written with tf.layers, as the classic TF1 tutorials wrote it: conv2d, batch
normalization (moving statistics updated through UPDATE_OPS), max pooling, dropout behind
a training flag, dense layers. Trains on the 8x8 digits and reports held-out accuracy with
the moving statistics and no dropout.

    python examples/layers_digits.py [--steps 400]
"""
import argparse

import numpy as np

import dtf as tf
from mlp_digits import load_digits


def cnn_model(images, training):
    net = tf.reshape(images, [-1, 8, 8, 1])
    net = tf.layers.conv2d(net, 16, 3, padding="same", use_bias=False,
                           kernel_initializer=tf.glorot_uniform_initializer(seed=1))
    net = tf.nn.relu(tf.layers.batch_normalization(net, training=training))
    net = tf.layers.max_pooling2d(net, 2, 2)                      # 4x4x16
    net = tf.layers.conv2d(net, 32, 3, padding="same", activation=tf.nn.relu,
                           kernel_initializer=tf.glorot_uniform_initializer(seed=2))
    net = tf.layers.flatten(tf.layers.max_pooling2d(net, 2, 2))  # 2*2*32
    net = tf.layers.dense(net, 64, activation=tf.nn.relu,
                          kernel_initializer=tf.glorot_uniform_initializer(seed=3))
    net = tf.layers.dropout(net, rate=0.3, training=training)
    return tf.layers.dense(net, 10, kernel_initializer=tf.glorot_uniform_initializer(seed=4))


def main(steps=400, batch=64):
    (train_x, train_y), (test_x, test_y) = load_digits()
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    training = tf.placeholder_with_default(False, [], name="training")
    logits = cnn_model(x, training)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    rng = np.random.default_rng(5)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, steps + 1):
            idx = rng.integers(0, len(train_x), batch)
            l, _ = sess.run([loss, train_op], {x: train_x[idx], y: train_y[idx], training: True})
            if step % 100 == 0:
                print(f"step {step}: loss {l:.4f}")
        acc = sess.run(accuracy, {x: test_x, y: test_y})
    print(f"held-out accuracy: {acc:.3f}")
    return acc


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    main(p.parse_args().steps)
