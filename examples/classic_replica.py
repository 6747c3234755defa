"""A between-graph replicated trainer written the way the classic TF1 tutorials and
distributed trainers were: tf.app.flags, placeholders declared with "float", tf.layers,
tf.losses, tf.metrics, summaries and tf.train.Supervisor, on 1 ps + N workers. Only the
import differs from a TensorFlow 1.x program (the 8x8 digits stand in for MNIST).

    python examples/classic_replica.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python examples/classic_replica.py ... --job_name=worker --task_index=0 --train_dir=/tmp/cr
    python examples/classic_replica.py ... --job_name=worker --task_index=1 --train_dir=/tmp/cr
"""
import os

import numpy as np

import dtf as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_string("train_dir", "/tmp/classic_replica", "Checkpoints and summaries")
flags.DEFINE_integer("hidden_units", 32, "Units of the hidden layer")
flags.DEFINE_integer("train_steps", 300, "Global steps to train to", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Examples per step")
flags.DEFINE_float("learning_rate", 0.2, "Learning rate of gradient descent")
FLAGS = flags.FLAGS

DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.npz")


def load_digits():
    with tf.gfile.GFile(DIGITS, "rb") as f:
        data = np.load(f)
        images, labels = data["images"].astype(np.float32) / 16.0, data["labels"]
    return images, np.eye(10, dtype=np.float32)[labels]


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","),
                                    "worker": FLAGS.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return

    is_chief = FLAGS.task_index == 0
    images, labels = load_digits()
    worker_device = "/job:worker/task:%d" % FLAGS.task_index
    with tf.device(tf.train.replica_device_setter(worker_device=worker_device, cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        x = tf.placeholder("float", [None, 64], name="x")
        y_ = tf.placeholder("float", [None, 10], name="y_")
        hidden = tf.layers.dense(x, FLAGS.hidden_units, activation=tf.nn.relu, name="hidden")
        logits = tf.layers.dense(hidden, 10, name="logits")
        loss = tf.losses.softmax_cross_entropy(y_, logits)
        train_op = tf.train.GradientDescentOptimizer(FLAGS.learning_rate).minimize(
            loss, global_step=global_step)
        tf.summary.scalar("loss", loss)
        summary_op = tf.summary.merge_all()
    with tf.device(worker_device):  # metric counters stay with each worker
        accuracy, update_accuracy = tf.metrics.accuracy(tf.argmax(y_, 1), tf.argmax(logits, 1))

    sv = tf.train.Supervisor(is_chief=is_chief, logdir=FLAGS.train_dir, global_step=global_step,
                             summary_op=None, recovery_wait_secs=1, save_model_secs=600)
    rng = np.random.RandomState(FLAGS.task_index)
    with sv.managed_session(server.target) as sess:
        tf.logging.info("Worker %d: session ready", FLAGS.task_index)
        step = local_step = 0
        while not sv.should_stop() and step < FLAGS.train_steps:
            idx = rng.randint(0, len(images), FLAGS.batch_size)
            feed = {x: images[idx], y_: labels[idx]}
            if is_chief and local_step % 50 == 0:
                _, step, summary = sess.run([train_op, global_step, summary_op], feed)
                sv.summary_computed(sess, summary, global_step=step)
            else:
                _, step = sess.run([train_op, global_step], feed)
            local_step += 1
        sess.run(update_accuracy, {x: images, y_: labels})
        print("Worker %d: %d local steps, global step %d, accuracy %.3f"
              % (FLAGS.task_index, local_step, step, sess.run(accuracy)))
        if is_chief:
            sv.saver.save(sess, sv.save_path, global_step=global_step)
        sv.request_stop()


if __name__ == "__main__":
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.app.run()
