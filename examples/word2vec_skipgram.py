"""word2vec skip-gram with NCE, between-graph and asynchronous: the embedding table and
the NCE weights are partitioned over every ps task, each worker looks up and updates only
the rows of its batch.

By hand, one process per task (each starts its own tf.train.Server):

    python examples/word2vec_skipgram.py --ps_hosts=localhost:2222,localhost:2223 \
        --worker_hosts=localhost:2224,localhost:2225 --job_name=ps --task_index=0
    python examples/word2vec_skipgram.py ... --job_name=ps --task_index=1
    python examples/word2vec_skipgram.py ... --job_name=worker --task_index=0
    python examples/word2vec_skipgram.py ... --job_name=worker --task_index=1

or under TF_CONFIG (``dtf run examples/word2vec_skipgram.py`` on a cluster.toml with two
ps tasks and two workers).

The corpus is synthetic, so nothing is downloaded: the vocabulary is cut into topics of
``--topic_size`` words, and a word's context words are drawn from its own topic, Zipf-like
(frequent words first, as in text). Skip-gram then learns to tell a topic's words from the
sampled negatives, and the loss falls. Each worker prints its mean loss over its first and
last ``--report_steps`` steps.
"""
import argparse
import os
import sys

import numpy as np

import dtf as tf


def build_model(flags, cluster, task_index, num_ps):
    """(train_op, mean loss, global_step, inputs, labels, the partitioned table)."""
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        inputs = tf.placeholder(tf.int64, [flags.batch_size], name="inputs")
        labels = tf.placeholder(tf.int64, [flags.batch_size, 1], name="labels")
        shards = tf.fixed_size_partitioner(num_ps)
        embeddings = tf.get_variable(
            "embeddings", [flags.vocabulary_size, flags.embedding_size], partitioner=shards,
            initializer=tf.random_uniform_initializer(-1.0, 1.0))
        nce_weights = tf.get_variable(
            "nce_weights", [flags.vocabulary_size, flags.embedding_size], partitioner=shards,
            initializer=tf.truncated_normal_initializer(stddev=1.0 / flags.embedding_size ** 0.5))
        nce_biases = tf.get_variable("nce_biases", [flags.vocabulary_size],
                                     initializer=tf.zeros_initializer())
        # "div": a partitioned variable's shards hold contiguous rows.
        embed = tf.nn.embedding_lookup(embeddings, inputs, partition_strategy="div")
        loss = tf.reduce_mean(tf.nn.nce_loss(
            weights=nce_weights, biases=nce_biases, labels=labels, inputs=embed,
            num_sampled=flags.num_sampled, num_classes=flags.vocabulary_size,
            partition_strategy="div"), name="loss")
        train_op = tf.train.GradientDescentOptimizer(flags.learning_rate).minimize(
            loss, global_step=global_step)
    return train_op, loss, global_step, inputs, labels, embeddings


def skipgram_batches(flags, seed):
    """Endless (centers, contexts) batches of the synthetic topic corpus."""
    rng = np.random.RandomState(seed)
    topics = flags.vocabulary_size // flags.topic_size
    ranks = np.arange(1, flags.topic_size + 1)
    within = (1.0 / ranks) / (1.0 / ranks).sum()  # Zipf-like word frequencies in a topic
    while True:
        topic = rng.randint(0, topics, flags.batch_size) * flags.topic_size
        centers = topic + rng.choice(flags.topic_size, flags.batch_size, p=within)
        contexts = topic + rng.choice(flags.topic_size, flags.batch_size, p=within)
        yield centers.astype(np.int64), contexts.astype(np.int64)[:, None]


def train(flags, cluster, task_index, master, num_ps):
    train_op, loss, global_step, inputs, labels, embeddings = build_model(
        flags, cluster, task_index, num_ps)
    if task_index == 0:
        print("embedding shards: " + ", ".join(f"{v.op.name} on {v.device}" for v in embeddings),
              flush=True)
    batches = skipgram_batches(flags, seed=task_index)
    losses = []
    hooks = [tf.train.StopAtStepHook(last_step=flags.last_step)]
    with tf.train.MonitoredTrainingSession(master=master, is_chief=task_index == 0,
                                           hooks=hooks, max_wait_secs=flags.max_wait_secs,
                                           save_checkpoint_secs=None,
                                           save_summaries_steps=None) as sess:
        while not sess.should_stop():
            centers, contexts = next(batches)
            _, value = sess.run([train_op, loss], {inputs: centers, labels: contexts})
            losses.append(float(value))
    n = min(flags.report_steps, max(len(losses) // 2, 1))
    first, last = np.mean(losses[:n]), np.mean(losses[-n:])
    print(f"worker {task_index}: {len(losses)} steps, mean loss of the first {n} {first:.3f}, "
          f"of the last {n} {last:.3f}", flush=True)


def resolve_task(flags):
    """(cluster spec, job name, task index, session master or None to start a server)."""
    if os.environ.get("TF_CONFIG"):
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return resolver.cluster_spec(), resolver.task_type, resolver.task_id, resolver.master()
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": flags.worker_hosts.split(",")})
    return cluster, flags.job_name, flags.task_index, None


def main(flags):
    cluster, job_name, task_index, master = resolve_task(flags)
    if job_name == "ps":
        if master is not None:
            print("ps task: served by the running cluster; nothing to do", flush=True)
            return 0
        server = tf.train.Server(cluster, job_name="ps", task_index=task_index)
        server.join()
        return 0
    if master is None:
        master = tf.train.Server(cluster, job_name="worker", task_index=task_index).target
    train(flags, cluster, task_index, master, cluster.num_tasks("ps"))
    return 0


def parse_flags(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--worker_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--job_name", default="", help="One of 'ps', 'worker'")
    p.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    p.add_argument("--vocabulary_size", type=int, default=10000)
    p.add_argument("--embedding_size", type=int, default=64)
    p.add_argument("--topic_size", type=int, default=20)
    p.add_argument("--batch_size", type=int, default=128)
    p.add_argument("--num_sampled", type=int, default=64, help="NCE negatives per batch")
    p.add_argument("--learning_rate", type=float, default=1.0)
    p.add_argument("--last_step", type=int, default=2000)
    p.add_argument("--report_steps", type=int, default=50)
    p.add_argument("--max_wait_secs", type=float, default=7200)
    flags = p.parse_args(argv)
    if not os.environ.get("TF_CONFIG") and not (flags.ps_hosts and flags.worker_hosts
                                                and flags.job_name):
        p.error("give --ps_hosts, --worker_hosts and --job_name, or set TF_CONFIG")
    return flags


if __name__ == "__main__":
    sys.exit(main(parse_flags(sys.argv[1:])))
