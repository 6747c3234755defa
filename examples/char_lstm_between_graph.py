"""A character-level LSTM language model (tf.nn.dynamic_rnn), trained between-graph:
one ps task holds the weights, N worker tasks train asynchronously.

By hand, one process per task (each starts its own tf.train.Server):

    python examples/char_lstm_between_graph.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python examples/char_lstm_between_graph.py ... --job_name=worker --task_index=0
    python examples/char_lstm_between_graph.py ... --job_name=worker --task_index=1

or under TF_CONFIG (``dtf run examples/char_lstm_between_graph.py``). Each worker prints
the mean loss of its first and last ten steps; the chief (worker 0) initializes the model.
"""
import argparse
import os
import sys

import numpy as np

import dtf as tf
import between_graph_async

TEXT = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it "
    "was the season of Light, it was the season of Darkness, it was the spring of hope, it "
    "was the winter of despair, we had everything before us, we had nothing before us. "
)
STEPS, BATCH, UNITS = 20, 16, 64


def vocabulary():
    chars = sorted(set(TEXT))
    return chars, np.array([chars.index(c) for c in TEXT], np.int32)


def batches(ids, rng):
    """Random windows of the text: inputs and the next character of each."""
    starts = rng.randint(0, len(ids) - STEPS - 1, BATCH)
    x = np.stack([ids[s:s + STEPS] for s in starts])
    y = np.stack([ids[s + 1:s + STEPS + 1] for s in starts])
    return x, y


def build_model(cluster, task_index, vocab_size):
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        inputs = tf.placeholder(tf.int32, [BATCH, STEPS], name="inputs")
        targets = tf.placeholder(tf.int32, [BATCH, STEPS], name="targets")
        embedding = tf.get_variable("embedding", [vocab_size, 32])
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(UNITS)
                                            for _ in range(2)])
        outputs, _ = tf.nn.dynamic_rnn(cell, tf.gather(embedding, inputs), dtype=tf.float32)
        softmax_w = tf.get_variable("softmax_w", [UNITS, vocab_size])
        softmax_b = tf.get_variable("softmax_b", [vocab_size], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.reshape(outputs, [-1, UNITS]), softmax_w) + softmax_b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tf.reshape(targets, [-1]), logits=logits), name="loss")
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    return inputs, targets, train_op, loss, global_step


def train(flags, cluster, task_index, master):
    chars, ids = vocabulary()
    inputs, targets, train_op, loss, global_step = build_model(cluster, task_index, len(chars))
    rng = np.random.RandomState(task_index)
    losses = []
    hooks = [tf.train.StopAtStepHook(last_step=flags.last_step)]
    with tf.train.MonitoredTrainingSession(master=master, is_chief=task_index == 0,
                                           hooks=hooks) as sess:
        while not sess.should_stop():
            x, y = batches(ids, rng)
            _, value = sess.run([train_op, loss], {inputs: x, targets: y})
            losses.append(value)
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    print(f"worker {task_index}: {len(losses)} steps, loss {first:.3f} -> {last:.3f}", flush=True)
    return first, last


def main(flags):
    """Serves a ps task, or trains on a worker (the task set-up of between_graph_async.py)."""
    return between_graph_async.main(flags, train_fn=train)


def parse_flags(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--worker_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--job_name", default="", help="One of 'ps', 'worker'")
    p.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    p.add_argument("--last_step", type=int, default=300, help="Global steps to train")
    flags = p.parse_args(argv)
    if not os.environ.get("TF_CONFIG") and not (flags.ps_hosts and flags.worker_hosts and flags.job_name):
        p.error("give --ps_hosts, --worker_hosts and --job_name, or set TF_CONFIG")
    return flags


if __name__ == "__main__":
    sys.exit(main(parse_flags(sys.argv[1:])))
