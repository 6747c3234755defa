"""tf.py_func runs in the process that built its graph: on a task that process serves,
and is refused, by name, on a task of another process."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster


def test_py_func_runs_on_this_processs_task_and_is_refused_on_another(make_cluster):
    cl = make_cluster(ps=1, worker=1)
    cl.start("ps", 0)
    server = tf.train.Server(cl.cluster_spec(), job_name="worker", task_index=0)
    calls = []

    def double(v):
        calls.append(v.copy())
        return v * 2

    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                x = tf.constant([1.0, 2.0]) + 1.0
            with tf.device("/job:worker/task:0"):
                here = tf.py_func(double, [x], tf.float32)
            with tf.Session(server.target) as sess:
                np.testing.assert_allclose(sess.run(here), [4.0, 6.0])
            assert len(calls) == 1
            with tf.device("/job:ps/task:0"):
                there = tf.py_func(double, [x], tf.float32, name="on_ps")
            with tf.Session(server.target) as sess:
                with pytest.raises(tf.errors.InvalidArgumentError,
                                   match="created by another process and cannot run in this one"):
                    sess.run(there)
            assert len(calls) == 1
    finally:
        server.stop()
