"""In-graph replication: one client builds one graph with the variables on /job:ps and a
copy of the model on each /job:worker task; the gradients of the copies are averaged and
applied once per step.

    python examples/in_graph_replication.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224     # tasks already running
    python examples/in_graph_replication.py              # starts an in-process cluster

With TF_CONFIG set, the cluster comes from it (the client talks to worker 0).
"""
import argparse
import os
import sys

import dtf as tf


def cluster_from(flags):
    """(cluster spec, servers started here): the given hosts, TF_CONFIG, or local servers."""
    if flags.ps_hosts and flags.worker_hosts:
        return tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                     "worker": flags.worker_hosts.split(",")}), []
    if os.environ.get("TF_CONFIG"):
        return tf.distribute.cluster_resolver.TFConfigClusterResolver().cluster_spec(), []
    from dtf.train.server import free_port

    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"],
                                 "worker": [f"127.0.0.1:{free_port()}" for _ in range(2)]})
    servers = [tf.train.Server(spec, job_name=job, task_index=i)
               for job in ("ps", "worker") for i in range(spec.num_tasks(job))]
    return spec, servers


def build(num_workers, batch_size=32):
    """One set of variables on the ps, one tower per worker; returns (train_op, loss, step)."""
    with tf.device("/job:ps/task:0"):
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(tf.zeros([1, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
    opt = tf.train.GradientDescentOptimizer(0.2)
    tower_grads, losses = [], []
    for i in range(num_workers):
        with tf.device(f"/job:worker/task:{i}"), tf.name_scope(f"tower_{i}"):
            x = tf.random_uniform([batch_size, 1], seed=i + 1)
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - (3.0 * x + 2.0)))
            losses.append(loss)
            tower_grads.append(opt.compute_gradients(loss, [w, b]))
    with tf.device("/job:ps/task:0"):
        averaged = [(tf.add_n([g for g, _ in pairs]) / float(num_workers), pairs[0][1])
                    for pairs in zip(*tower_grads)]
        train_op = opt.apply_gradients(averaged, global_step=global_step)
        loss = tf.add_n(losses) / float(num_workers)
    return train_op, loss, global_step


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", default="")
    p.add_argument("--worker_hosts", default="")
    p.add_argument("--last_step", type=int, default=200)
    flags = p.parse_args(argv)
    cluster, servers = cluster_from(flags)
    train_op, loss, global_step = build(cluster.num_tasks("worker"))
    master = "grpc://" + cluster.task_address("worker", 0)
    try:
        with tf.train.MonitoredTrainingSession(
                master=master, hooks=[tf.train.StopAtStepHook(last_step=flags.last_step)]) as sess:
            while not sess.should_stop():
                _, loss_value, step = sess.run([train_op, loss, global_step])
        print(f"in-graph replication over {cluster.num_tasks('worker')} workers: "
              f"global step {step}, loss {loss_value:.5f}", flush=True)
    finally:
        for server in servers:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
