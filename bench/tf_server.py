"""A TensorFlow task with the classic flags of ``dtf server``: the peer's servers.

``python -m bench.tf_server --cluster_spec='ps|h:p,worker|h:p;h:p' --job_name=ps
--task_index=0`` serves until SIGTERM (tf.train.Server + join, as TF1 scripts do).
"""
from __future__ import annotations

import argparse
import os


def parse_cluster(flags: str) -> dict:
    return {job: addrs.split(";") for job, _, addrs in (p.partition("|") for p in flags.split(","))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cluster_spec", required=True)
    p.add_argument("--job_name", required=True)
    p.add_argument("--task_index", type=int, default=0)
    args = p.parse_args(argv)
    from bench.impl import load

    tf = load("tf")
    cluster = tf.train.ClusterSpec(parse_cluster(args.cluster_spec))
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    print(f"tf server /job:{args.job_name}/task:{args.task_index} listening on "
          f"{server.target} pid {os.getpid()}", flush=True)
    server.join()


if __name__ == "__main__":
    main()
