"""Variables on parameter servers: the seeds' two-ps layout, Saver across ps tasks, state
shared by every client of the cluster, Session.reset and device_filters."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import dtf as tf
from dtf.framework import errors
from tests.cluster.conftest import REPO

pytestmark = pytest.mark.cluster


def _two_ps_model():
    with tf.device("/job:ps/task:0"):
        weights_1 = tf.Variable(tf.random_normal([4, 8], seed=1), name="weights_1")
        biases_1 = tf.Variable(tf.zeros([8]), name="biases_1")
    with tf.device("/job:ps/task:1"):
        weights_2 = tf.Variable(tf.random_normal([8, 2], seed=2), name="weights_2")
        biases_2 = tf.Variable(tf.zeros([2]), name="biases_2")
    with tf.device("/job:worker/task:0"):
        inputs = tf.placeholder(tf.float32, [None, 4])
        labels = tf.placeholder(tf.int64, [None])
        layer_1 = tf.nn.relu(tf.matmul(inputs, weights_1) + biases_1)
        logits = tf.nn.relu(tf.matmul(layer_1, weights_2) + biases_2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return inputs, labels, loss, train_op, global_step, [weights_1, biases_1, weights_2, biases_2]


def test_weights_on_two_ps_tasks_layers_on_a_worker(make_cluster):
    cl = make_cluster(ps=2, worker=1).start_all()
    inputs, labels, loss, train_op, gs, variables = _two_ps_model()
    assert variables[0].device == "/job:ps/task:0" and variables[2].device == "/job:ps/task:1"
    rng = np.random.default_rng(0)
    x = rng.random((32, 4)).astype(np.float32)
    y = (x.sum(1) > 2).astype(np.int64)
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {inputs: x, labels: y})
        for _ in range(30):
            sess.run(train_op, {inputs: x, labels: y})
        assert sess.run(loss, {inputs: x, labels: y}) < first
        assert sess.run(gs) == 30


def test_saver_saves_and_restores_variables_on_two_ps_tasks(make_cluster, tmp_path):
    cl = make_cluster(ps=2, worker=1).start_all()
    *_, variables = _two_ps_model()
    saver = tf.train.Saver()
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        saved = sess.run(variables)
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
        sess.run([v.assign(tf.zeros_like(v)) for v in variables])
        saver.restore(sess, path)
        for want, got in zip(saved, sess.run(variables)):
            np.testing.assert_array_equal(want, got)
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    np.testing.assert_array_equal(tf.train.load_variable(path, "weights_2"), saved[2])


CLIENT = """
import json, sys
import dtf as tf
with tf.device("/job:ps/task:0"):
    v = tf.Variable(tf.zeros([3]), name="shared")
with tf.Session(sys.argv[1]) as sess:
    if sys.argv[2] == "init":
        sess.run(v.initializer)
        sess.run(v.assign([1.0, 2.0, 3.0]))
    print(json.dumps(sess.run(v).tolist()))
"""


def _client(target, mode):
    out = subprocess.run([sys.executable, "-c", CLIENT, target, mode], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_state_on_ps_is_shared_by_client_processes_until_reset(make_cluster):
    cl = make_cluster(ps=1, worker=2).start_all()
    assert _client(cl.target("worker", 0), "init") == [1.0, 2.0, 3.0]
    assert _client(cl.target("worker", 1), "read") == [1.0, 2.0, 3.0]  # another client, another master
    tf.Session.reset(cl.target("worker", 0))
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([3]), name="shared")
    with tf.Session(cl.target("worker", 1)) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="shared"):
            sess.run(v)


def test_device_filters_are_honoured(make_cluster):
    cl = make_cluster(ps=1, worker=1).start_all()
    with tf.device("/job:ps/task:0"):
        a = tf.constant(3.0) * 2.0
    with tf.device("/job:worker/task:0"):
        b = tf.constant(1.0) + 1.0
    only_worker = tf.ConfigProto(device_filters=["/job:worker"])
    with tf.Session(cl.target("worker", 0), config=only_worker) as sess:
        assert sess.run(b) == 2.0
        with pytest.raises(errors.InvalidArgumentError, match="device_filters"):
            sess.run(a)


def test_init_from_checkpoint_and_moving_averages_for_variables_on_a_ps(make_cluster, tmp_path):
    """The checkpoint is read and the shadows are kept by the task holding the variables."""
    cl = make_cluster(ps=1, worker=1).start_all()
    with tf.Graph().as_default():
        with tf.variable_scope("pretrained"):
            tf.get_variable("w", initializer=np.arange(4, dtype=np.float32))
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(tmp_path / "model.ckpt"))
    with tf.device(tf.train.replica_device_setter(cluster=cl.cluster_spec())):
        w = tf.get_variable("model/w", [4])
        tf.train.init_from_checkpoint(str(tmp_path), {"pretrained/": "model/"})
        ema = tf.train.ExponentialMovingAverage(0.5)
        maintain = ema.apply([w])  # the shadow starts at w's restored value
        move = tf.assign_add(w, tf.ones([4]))
    assert w.device == ema.average(w).device == "/job:ps/task:0"
    assert tf.DeviceSpec.from_string(w.initializer.inputs[1].op.device).job == "ps"
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w), np.arange(4))
        sess.run(move)
        sess.run(maintain)
        np.testing.assert_array_equal(sess.run(ema.average(w)), np.arange(4) + 0.5)
