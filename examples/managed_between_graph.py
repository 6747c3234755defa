"""Between-graph asynchronous training started by a cluster manager: every process is one
task, which learns its cluster and its own job and index from the manager.

Under Slurm, every task is one rank of an srun step:

    srun --ntasks=3 python examples/managed_between_graph.py --ps 1 --workers 2 --checkpoint_dir=$HOME/ckpt

and each rank asks SlurmClusterResolver which task it is (jobs sorted by name take the ranks
in turn: with one ps, rank 0 is ps:0 and ranks 1, 2 are worker:0, worker:1). Under
Kubernetes (a Kubeflow TFJob, examples/kubernetes/tfjob.yaml) each pod gets TF_CONFIG, read
by TFConfigClusterResolver. Either way the task starts its tf.train.Server and then serves
(ps) or trains (worker), with the model and training loop of between_graph_async.py.
Worker 0 is the chief. --checkpoint_dir must be on a file system all tasks share.
"""
import argparse
import os
import sys

import dtf as tf
import between_graph_async


def make_resolver(flags):
    """The cluster manager's resolver: --resolver, or the one whose environment is set."""
    kind = flags.resolver
    if kind == "auto":
        kind = "slurm" if "SLURM_PROCID" in os.environ else "tf_config"
    if kind == "slurm":
        return tf.distribute.cluster_resolver.SlurmClusterResolver(
            jobs={"ps": flags.ps, "worker": flags.workers}, port_base=flags.port_base,
            auto_set_gpu=False)
    if not os.environ.get("TF_CONFIG"):
        raise SystemExit("no cluster manager found: neither SLURM_PROCID (srun) nor TF_CONFIG is set")
    return tf.distribute.cluster_resolver.TFConfigClusterResolver()


def resolve_task(flags):
    """(cluster spec, job name, task index) of this process."""
    resolver = make_resolver(flags)
    cluster = resolver.cluster_spec()  # Slurm's resolver learns this task's identity here
    return cluster, resolver.task_type, resolver.task_id


def done_queues(cluster):
    """One queue per ps task, shared by name: each worker puts a token in every queue when it
    is done, and a ps task ends once it took one from each worker (so the srun step ends)."""
    queues = []
    for i in range(cluster.num_tasks("ps")):
        with tf.device(f"/job:ps/task:{i}"):
            queues.append(tf.FIFOQueue(cluster.num_tasks("worker"), tf.int32,
                                       shared_name=f"done_queue{i}"))
    return queues


def main(flags):
    cluster, job_name, task_index = resolve_task(flags)
    server = tf.train.Server(cluster, job_name=job_name, task_index=task_index)
    print(f"{job_name} {task_index} of {cluster.as_dict()} serving on {server.target}", flush=True)
    if job_name == "ps":
        token = done_queues(cluster)[task_index].dequeue()
        with tf.Session(server.target) as sess:
            for _ in range(cluster.num_tasks("worker")):
                sess.run(token)
        print(f"ps {task_index}: every worker is done", flush=True)
        return 0
    between_graph_async.train(flags, cluster, task_index, server.target)
    with tf.Graph().as_default():
        signals = [q.enqueue(1) for q in done_queues(cluster)]
        sess = tf.Session(server.target)
        try:
            sess.run(signals)
            sess.close()
        except tf.errors.UnavailableError:
            # The last worker's token lets the ps tasks end, and a ps may end before its
            # reply to that enqueue is on its way: the token was taken all the same.
            pass
    return 0


def parse_flags(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--resolver", choices=("auto", "slurm", "tf_config"), default="auto",
                   help="Where the cluster comes from (auto: Slurm under srun, else TF_CONFIG)")
    p.add_argument("--ps", type=int, default=1, help="Slurm: ps tasks (the first ranks of the step)")
    p.add_argument("--workers", type=int, default=2, help="Slurm: worker tasks (the other ranks)")
    p.add_argument("--port_base", type=int, default=8888, help="Slurm: port of the first task on each node")
    p.add_argument("--checkpoint_dir", default="/tmp/train_logs")
    p.add_argument("--last_step", type=int, default=1000)
    p.add_argument("--save_checkpoint_steps", type=int, default=100)
    p.add_argument("--max_wait_secs", type=float, default=7200)
    p.add_argument("--step_delay", type=float, default=0.0, help="Seconds to sleep after each step")
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main(parse_flags(sys.argv[1:])))
