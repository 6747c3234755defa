"""CURVE clusters: only holders of the cluster's keys get anything executed; size limits."""
from __future__ import annotations

import os

import numpy as np
import pytest
import zmq

import dtf as tf
from dtf.framework import errors
from dtf.wire import security, transport
from tests.cluster.conftest import Cluster

pytestmark = pytest.mark.cluster


@pytest.fixture
def keyfile(tmp_path):
    path = tmp_path / "cluster.key"
    security.ClusterKeys.generate().save(path)
    return str(path)


@pytest.fixture
def secure_cluster(keyfile, monkeypatch):
    monkeypatch.setenv(security.ENV_KEYS, keyfile)  # inherited by the task processes
    cl = Cluster({"local": 2}).start_all()
    yield cl
    cl.stop()


def _graph():
    x = tf.constant(2)
    with tf.device("/job:local/task:1"):
        y2 = x - 66
    with tf.device("/job:local/task:0"):
        y = x + 300 + y2
    return y


def test_key_holder_runs_graphs_across_tasks(secure_cluster):
    with tf.Session(secure_cluster.target("local", 0)) as sess:
        assert sess.run(_graph()) == 238


@pytest.mark.parametrize("client_keys", ["none", "other"])
def test_client_without_the_keys_gets_nothing(secure_cluster, monkeypatch, client_keys, tmp_path):
    address = secure_cluster.jobs["local"][0]
    keys = None if client_keys == "none" else security.ClusterKeys.generate()
    client = transport.Client(keys)
    try:
        with pytest.raises(transport.Unreachable):
            client.ping(address, 1.0)
        with pytest.raises(transport.Unreachable):
            client.call(address, {"type": "Status"}, 1.0)
    finally:
        client.close()
    if client_keys == "none":
        monkeypatch.delenv(security.ENV_KEYS)
    else:
        other = tmp_path / "other.key"
        keys.save(other)
        monkeypatch.setenv(security.ENV_KEYS, str(other))
    monkeypatch.setenv("DTF_CONNECT_TIMEOUT_S", "1.5")
    with tf.Session(secure_cluster.target("local", 0)) as sess:
        # Refused at once and said why (waiting could not help), not a timeout.
        with pytest.raises(errors.UnauthenticatedError, match=f"The task at {address} is encrypted"):
            sess.run(_graph())


def test_sockets_are_encrypted_with_curve(keyfile):
    from dtf.runtime.service import TaskService
    from dtf.train.server import free_port

    keys = security.ClusterKeys.load(keyfile)
    svc = TaskService({"local": {0: f"127.0.0.1:{free_port()}"}}, "local", 0, security=keys)
    try:
        router = svc._loop._router
        assert router.get(zmq.MECHANISM) == zmq.CURVE and router.get(zmq.CURVE_SERVER) == 1
        assert svc._loop._lane_listener is None  # the same-host lane has no encryption
        client = transport.Client(keys)
        sock = client._socket(svc.address)
        assert sock.get(zmq.MECHANISM) == zmq.CURVE
        client.close()
    finally:
        svc.stop()


def test_key_file_readable_by_others_is_refused(keyfile):
    os.chmod(keyfile, 0o644)
    with pytest.raises(security.KeyFileError, match="chmod 600"):
        security.ClusterKeys.load(keyfile)


# 5 MiB goes as one message of 4 MiB frames, 12 MiB as a stream of 4 MiB parts; both are
# over the limit, and a task reads frames of 4 MiB even when its limit is lower.
@pytest.mark.parametrize("limit", [1 << 20, 3 << 20])
@pytest.mark.parametrize("elements", [5 << 18, 3 << 20])
def test_oversized_message_gets_an_error_reply_and_the_task_keeps_serving(monkeypatch, elements, limit):
    monkeypatch.setenv(security.ENV_MAX_MESSAGE, str(limit))
    cl = Cluster({"local": 1}).start_all()
    try:
        monkeypatch.delenv(security.ENV_MAX_MESSAGE)  # the client itself allows more
        monkeypatch.setenv("DTF_SHM", "0")  # through the socket, not shared memory
        big = tf.placeholder(tf.float32, [None])
        total = tf.reduce_sum(big)
        with tf.Session(cl.target("local", 0)) as sess:
            with pytest.raises(errors.ResourceExhaustedError, match="limit"):
                sess.run(total, {big: np.ones(elements, np.float32)},
                         options=tf.RunOptions(timeout_in_ms=60_000))  # fails, never hangs
            assert sess.run(total, {big: np.ones(10, np.float32)}) == 10.0
    finally:
        cl.stop()


@pytest.mark.parametrize("elements", [5 << 18, 3 << 20])  # 5 MiB framed, 12 MiB streamed
def test_a_tensor_over_the_receiving_tasks_limit_fails_its_step_at_once(monkeypatch, elements):
    """Task 0 accepts less than task 1 sends: the refused push fails the step with
    ResourceExhausted instead of leaving task 0 waiting for the tensor."""
    monkeypatch.setenv("DTF_SHM", "0")  # through the socket, not shared memory
    cl = Cluster({"local": 2})
    try:
        monkeypatch.setenv(security.ENV_MAX_MESSAGE, str(3 << 20))
        cl.start("local", 0)
        monkeypatch.delenv(security.ENV_MAX_MESSAGE)
        cl.start("local", 1)
        with tf.device("/job:local/task:1"):
            v = tf.Variable(tf.ones([elements]))
            head = v[:3]
        with tf.device("/job:local/task:0"):
            total = tf.reduce_sum(v)
        with tf.Session(cl.target("local", 0)) as sess:
            sess.run(v.initializer)
            with pytest.raises(errors.ResourceExhaustedError, match="limit"):
                sess.run(total, options=tf.RunOptions(timeout_in_ms=60_000))
            np.testing.assert_array_equal(sess.run(head), np.ones(3, np.float32))
    finally:
        cl.stop()


def test_a_large_string_feed_over_a_low_limit_is_refused_not_dropped(monkeypatch):
    """A 6 MiB string goes as frames of at most 4 MiB, which a task reads whatever its
    limit: it is refused with an answer instead of ZeroMQ dropping the connection."""
    monkeypatch.setenv(security.ENV_MAX_MESSAGE, str(1 << 20))
    cl = Cluster({"local": 1}).start_all()
    try:
        monkeypatch.delenv(security.ENV_MAX_MESSAGE)
        text = tf.placeholder(tf.string, [None])
        count = tf.size(text)
        with tf.Session(cl.target("local", 0)) as sess:
            with pytest.raises(errors.ResourceExhaustedError, match="limit"):
                sess.run(count, {text: np.array([b"x" * (6 << 20)], dtype=object)},
                         options=tf.RunOptions(timeout_in_ms=60_000))
            assert sess.run(count, {text: np.array([b"ok"], dtype=object)}) == 1
    finally:
        cl.stop()
