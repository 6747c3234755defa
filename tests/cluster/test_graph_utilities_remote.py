"""Graph utilities across processes: tf.py_func runs in the process that built its graph
(refused, by name, on a task of another process); Print, asserts, check_numerics and
summaries run on a remote task and their errors come back as TF's classes."""
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


def test_asserts_checks_prints_and_summaries_run_on_a_remote_task(make_cluster):
    cl = make_cluster(ps=1).start_all()
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None])
        with tf.device("/job:ps/task:0"):
            checked = tf.check_numerics(tf.Print(x * 2.0, [x], "on ps: "), "doubled")
            guard = tf.assert_positive(x, message="x must be positive")
            printed = tf.print("x is", x)
            image = tf.summary.image("img", tf.reshape(x, [1, 1, -1, 1]))
            text = tf.summary.text("note", tf.constant("remote"))
        with tf.Session(cl.target("ps", 0)) as sess:
            values = sess.run([checked, printed, guard, image, text], {x: [1.0, 2.0]})
            np.testing.assert_allclose(values[0], [2.0, 4.0])
            summary = tf.Summary.FromString(values[3])
            assert summary.value[0].tag == "img/image/0"
            assert tf.Summary.FromString(values[4]).value[0].tensor.string_val == [b"remote"]
            with pytest.raises(tf.errors.InvalidArgumentError, match="doubled : Tensor had NaN"):
                sess.run(checked, {x: [np.nan]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="x must be positive"):
                sess.run(guard, {x: [-1.0]})
