"""tf.train.Server refuses a task the cluster does not define, as TF does (InternalError
naming the task and job), before opening any socket."""
import pytest

import dtf as tf

CLUSTER = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}


def test_out_of_range_task_index():
    with pytest.raises(tf.errors.InternalError, match=r'Task 5 was not defined in job "worker" \(its tasks: \[0, 1\]\)'):
        tf.train.Server(CLUSTER, job_name="worker", task_index=5, start=False)


def test_unknown_job():
    with pytest.raises(tf.errors.InternalError, match='Job "ps" was not defined in cluster'):
        tf.train.Server(CLUSTER, job_name="ps", task_index=0, start=False)


def test_free_port_never_hands_out_one_port_twice():
    # A cluster.toml built from several free_port() calls once listed one address for two
    # workers: the kernel gives a closed ephemeral port out again.
    from dtf.train.server import free_port

    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)
