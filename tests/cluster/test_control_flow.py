"""tf.cond and tf.while_loop in partitioned graphs: bodies that read and update variables
on a ps task, a loop placed on a remote worker, training through a loop whose weights
live on the ps, and the error for a body that assigns to variables on two devices."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_bodies_update_ps_variables_and_train_through_a_loop(make_cluster):
    cl = make_cluster(ps=1, worker=2).start_all()
    setter = tf.train.replica_device_setter(cluster=cl.cluster_spec(),
                                            worker_device="/job:worker/task:0")
    with tf.device(setter):
        w = tf.get_variable("w", [3], initializer=tf.constant_initializer([0.5, -0.5, 1.0]))
        counter = tf.get_variable("counter", [], initializer=tf.zeros_initializer())
        x = tf.placeholder(tf.float32, [3])
        n = tf.placeholder(tf.int32, [])
        take = tf.placeholder(tf.bool, [])

        def body(i, h):
            tick = tf.assign_add(counter, 1.0)  # an update on the ps, inside the loop
            with tf.control_dependencies([tick]):
                return i + 1, tf.tanh(h * w + x)

        _, h = tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])
        loss = tf.cond(take, lambda: tf.reduce_sum(h * h), lambda: tf.reduce_sum(h))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    loop_op = h.op
    assert loop_op.type == "While" and loop_op.device == "/job:ps/task:0"  # it updates counter
    feed = {x: [0.3, 0.6, -0.2], n: 4, take: True}
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(20):
            sess.run(train, feed)
        assert sess.run(loss, feed) < first
        # 1 + 20 training steps + 1, four iterations each: the loop ran on the ps every time
        assert sess.run(counter) == 4.0 * 22
        assert sess.run(loss, {**feed, n: 0, take: False}) == pytest.approx(0.7)


def test_a_cond_reading_ps_variables_runs_on_the_worker_it_is_placed_on(make_cluster):
    cl = make_cluster(ps=1, worker=2).start_all()
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    with tf.device("/job:worker/task:1"):
        p = tf.placeholder(tf.bool, [])
        out = tf.cond(p, lambda: v * 10.0, lambda: tf.while_loop(
            lambda i, a: i < 3, lambda i, a: (i + 1, a + v), [tf.constant(0), tf.zeros([2])])[1])
    assert out.op.device == "/job:worker/task:1"
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(out, {p: True}), [10.0, 20.0])
        np.testing.assert_allclose(sess.run(out, {p: False}), [3.0, 6.0])


def test_a_body_assigning_to_variables_on_two_ps_tasks_is_refused_by_name(make_cluster):
    cl = make_cluster(ps=2, worker=1).start_all()
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(0.0, name="a")
    with tf.device("/job:ps/task:1"):
        b = tf.Variable(0.0, name="b")
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: tf.assign_add(a, 1.0) + tf.assign_add(b, 1.0), lambda: tf.constant(0.0),
                  name="two_ps_cond")
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match="two_ps_cond.*another device"):
            sess.run(out, {p: True})


def test_char_lstm_example_trains_between_graph_on_one_ps_and_two_workers():
    """examples/char_lstm_between_graph.py: dynamic_rnn weights on the ps, two workers."""
    import os
    import re
    import subprocess
    import sys

    from dtf.train.server import free_port
    from tests.cluster.conftest import REPO

    ps, w0, w1 = (f"127.0.0.1:{free_port()}" for _ in range(3))
    script = os.path.join(REPO, "examples", "char_lstm_between_graph.py")
    flags = [f"--ps_hosts={ps}", f"--worker_hosts={w0},{w1}", "--last_step=120"]
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "DTF_PROGRESS")}

    def start(*args):
        return subprocess.Popen([sys.executable, script, *flags, *args], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    ps_proc = start("--job_name=ps")
    try:
        workers = [start("--job_name=worker", f"--task_index={i}") for i in (0, 1)]
        outs = []
        for w in workers:
            try:
                outs.append(w.communicate(timeout=240)[0])
            except subprocess.TimeoutExpired:
                w.kill()
                pytest.fail(f"worker did not finish:\n{w.communicate()[0]}")
            assert w.returncode == 0, outs[-1]
    finally:
        ps_proc.kill()
        ps_proc.communicate()
    chief = re.search(r"worker 0: (\d+) steps, loss ([\d.]+) -> ([\d.]+)", outs[0])
    assert chief, outs[0]
    first, last = float(chief.group(2)), float(chief.group(3))
    assert last < first - 0.5, outs[0]
