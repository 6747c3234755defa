"""Softmax regression on the bundled 8x8 digits, written the way the classic TF1
tutorials were: "float" placeholders, tf.app.flags, tf.gfile for the log directory,
summaries for TensorBoard and tf.app.run. Only the import differs from TensorFlow.

    python examples/softmax_tutorial.py --max_steps=1000 --summaries_dir=/tmp/softmax_logs
"""
import os

import numpy as np

import dtf as tf

flags = tf.app.flags
flags.DEFINE_integer("max_steps", 1000, "Number of training steps.")
flags.DEFINE_float("learning_rate", 0.5, "Learning rate of plain gradient descent.")
flags.DEFINE_integer("batch_size", 100, "Examples per training step.")
flags.DEFINE_string("summaries_dir", "/tmp/dtf_softmax_logs", "Where summaries are written.")
FLAGS = flags.FLAGS

DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.npz")


def load_digits():
    with tf.gfile.GFile(DIGITS, "rb") as f:
        data = np.load(f)
        images, labels = data["images"].astype(np.float32) / 16.0, data["labels"]
    one_hot = np.eye(10, dtype=np.float32)[labels]
    order = np.random.RandomState(0).permutation(len(images))
    images, one_hot = images[order], one_hot[order]
    return (images[360:], one_hot[360:]), (images[:360], one_hot[:360])


def main(_):
    if tf.gfile.Exists(FLAGS.summaries_dir):
        tf.gfile.DeleteRecursively(FLAGS.summaries_dir)
    tf.gfile.MakeDirs(FLAGS.summaries_dir)
    (train_x, train_y), (test_x, test_y) = load_digits()

    x = tf.placeholder("float", [None, 64])
    y_ = tf.placeholder("float", [None, 10])
    W = tf.Variable(tf.zeros([64, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.nn.softmax(tf.matmul(x, W) + b)
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(y_ * tf.log(y + 1e-10), axis=1))
    cross_entropy = tf.check_numerics(cross_entropy, "cross entropy")
    train_step = tf.train.GradientDescentOptimizer(FLAGS.learning_rate).minimize(cross_entropy)
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))

    tf.summary.scalar("cross_entropy", cross_entropy)
    tf.summary.scalar("accuracy", accuracy)
    tf.summary.image("input", tf.reshape(x, [-1, 8, 8, 1]), max_outputs=4)
    merged = tf.summary.merge_all()

    with tf.Session() as sess:
        writer = tf.summary.FileWriter(FLAGS.summaries_dir + "/train", sess.graph)
        tf.global_variables_initializer().run()
        rng = np.random.RandomState(1)
        for step in range(FLAGS.max_steps):
            idx = rng.randint(0, len(train_x), FLAGS.batch_size)
            feed = {x: train_x[idx], y_: train_y[idx]}
            if step % 100 == 0:
                summary, acc = sess.run([merged, accuracy], feed)
                writer.add_summary(summary, step)
                tf.logging.info("step %d: batch accuracy %.3f", step, acc)
            sess.run(train_step, feed)
        writer.close()
        print("test accuracy %.4f" % sess.run(accuracy, {x: test_x, y_: test_y}))


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run()
