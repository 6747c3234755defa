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
