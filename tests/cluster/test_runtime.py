"""The seeds' multi-process programs and the runtime's error rules, on real processes."""
from __future__ import annotations

import os
import sys
import time

import numpy as np
import pytest
import zmq

import dtf as tf
from dtf.framework import errors

pytestmark = pytest.mark.cluster


def test_create_local_server_hello():
    c = tf.constant("Hello, distributed TensorFlow!")
    server = tf.train.Server.create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:")
        sess = tf.Session(server.target)
        assert sess.run(c) == b"Hello, distributed TensorFlow!"
        sess.close()
    finally:
        server.stop()


def _unix_names():
    with open("/proc/net/unix") as f:
        return {line.split()[-1] for line in f.readlines()[1:]}


@pytest.mark.parametrize("ipc", ["1", "0"])
def test_238_over_two_task_processes(make_cluster, monkeypatch, ipc):
    monkeypatch.setenv("DTF_IPC", ipc)  # task processes inherit it; "0": TCP as between hosts
    cl = make_cluster(local=2).start_all()
    if sys.platform.startswith("linux"):
        names = _unix_names()
        ports = [a.rsplit(":", 1)[1] for a in cl.jobs["local"]]
        assert all(any(n.startswith(f"@dtf-lane-{p}-") for n in names) == (ipc == "1") for p in ports)
    x = tf.constant(2)
    with tf.device("/job:local/task:1"):
        y2 = x - 66
    with tf.device("/job:local/task:0"):
        y1 = x + 300
        y = y1 + y2
    with tf.Session(cl.target("local", 0)) as sess:
        assert sess.run(y) == 238
        assert sess.run(y) == 238  # the cached partitions run again


def test_fed_mean_split_over_two_tasks(make_cluster):
    cl = make_cluster(local=2).start_all()
    x = tf.placeholder(tf.float32, 100)
    with tf.device("/job:local/task:1"):
        first_batch = tf.slice(x, [0], [50])
        mean1 = tf.reduce_mean(first_batch)
    with tf.device("/job:local/task:0"):
        second_batch = tf.slice(x, [50], [-1])
        mean2 = tf.reduce_mean(second_batch)
        mean = (mean1 + mean2) / 2
    data = np.random.random(100).astype(np.float32)
    with tf.Session(cl.target("local", 0)) as sess:
        assert sess.run(mean, feed_dict={x: data}) == pytest.approx(float(data.mean()), rel=1e-5)


def test_a_remote_partitions_last_tensors_ride_in_its_reply(make_cluster):
    """Once planned, a step whose remote part ends by sending to the master's task costs
    the master's task one message (the client's RunStep): the tensors come back in the
    RunGraph reply, not in a push of their own. Results stay right both ways round."""
    from dtf.wire import transport

    cl = make_cluster(local=2).start_all()
    with tf.device("/job:local/task:1"):
        v = tf.Variable(3.0)
        a = v + 1.0
    with tf.device("/job:local/task:0"):
        b = a * 2.0
        c = b + 1.0
    with tf.device("/job:local/task:1"):
        d = c * 10.0  # and back: task 1 waits for task 0 mid-way, then sends nothing
    client = transport.Client(None)
    served = lambda: client.call(cl.jobs["local"][0], {"type": "Status"}, 10)["messages"]  # noqa: E731
    with tf.Session(cl.target("local", 0)) as sess:
        sess.run(v.initializer)
        assert sess.run(b) == 8.0  # plans the signature
        before = served()
        assert [sess.run(b) for _ in range(5)] == [8.0] * 5
        assert served() - before == 5 + 1  # five RunSteps and the Status itself
        assert sess.run([b, d]) == [8.0, 90.0]
        assert sess.run([b, d]) == [8.0, 90.0]
    client.close()


def _server_beside_a_task_process(cl):
    """Task local:0 served in this process (its master runs the steps on the calling
    thread, as in between-graph training), local:1 in a process of its own."""
    cl.start("local", 1)
    return tf.train.Server(cl.cluster_spec(), job_name="local", task_index=0)


def test_tensors_for_the_masters_task_come_back_on_the_request_connection(make_cluster):
    """A remote part's tensors for the task whose master asked for it travel back on the
    RunGraph's own connection, ahead of its reply, to the thread that waits in the step:
    once planned, the master's task serves no message per step. Results stay right."""
    from dtf.wire import transport

    cl = make_cluster(local=2)
    server = _server_beside_a_task_process(cl)
    client = transport.Client(None)
    served = lambda: client.call(cl.jobs["local"][0], {"type": "Status"}, 10)["messages"]  # noqa: E731
    try:
        with tf.Graph().as_default():
            with tf.device("/job:local/task:1"):
                v = tf.Variable(np.arange(4, dtype=np.float32))
                a = v + 1.0
            with tf.device("/job:local/task:0"):
                b = a * 2.0  # waits for task 1's tensor mid-step
            with tf.device("/job:local/task:1"):
                d = tf.reduce_sum(b * 10.0)  # and task 1 waits for task 0's
            with tf.Session(server.target) as sess:
                sess.run(v.initializer)
                for _ in range(3):  # plans the signature; task 1 then runs it on its I/O thread
                    sess.run([b, d])
                before = served()
                for _ in range(10):
                    got_b, got_d = sess.run([b, d])
                    np.testing.assert_array_equal(got_b, [2.0, 4.0, 6.0, 8.0])
                    assert got_d == 200.0
                assert served() - before == 1  # the Status itself: no tensor pushes
    finally:
        client.close()
        server.stop()


def test_a_remote_error_ends_a_step_waiting_for_that_tasks_tensors(make_cluster):
    """The master's partition waits for a tensor task 1 never sends: task 1's error reply,
    read by the same wait, fails the step with its class, op and task; the next one runs."""
    cl = make_cluster(local=2)
    server = _server_beside_a_task_process(cl)
    try:
        with tf.Graph().as_default():
            idx = tf.placeholder(tf.int32, [])
            with tf.device("/job:local/task:1"):
                picked = tf.gather(tf.constant([1.0, 2.0, 3.0]), idx, name="pick")
            with tf.device("/job:local/task:0"):
                out = picked * 2.0
            with tf.Session(server.target) as sess:
                for _ in range(3):
                    assert sess.run(out, {idx: 1}) == 4.0
                with pytest.raises(errors.InvalidArgumentError) as e:
                    sess.run(out, {idx: 7})
                assert "pick" in str(e.value) and "/job:local/replica:0/task:1" in str(e.value)
                assert sess.run(out, {idx: 2}) == 6.0
    finally:
        server.stop()


def test_client_in_a_third_process_talks_to_remote_master(make_cluster):
    cl = make_cluster(worker=2).start_all()
    a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with tf.device("/job:worker/task:0"):
        b = a * 2.0
    with tf.device("/job:worker/task:1"):
        c = tf.reduce_sum(b, axis=1)
    with tf.Session(cl.target("worker", 1)) as sess:
        np.testing.assert_allclose(sess.run(c), [6.0, 24.0])


def test_remote_op_error_keeps_class_and_names_op_and_task(make_cluster):
    cl = make_cluster(local=2).start_all()
    idx = tf.placeholder(tf.int32, [])
    with tf.device("/job:local/task:1"):
        params = tf.constant([1.0, 2.0, 3.0])
        g = tf.gather(params, idx, name="pick")
    with tf.Session(cl.target("local", 0)) as sess:
        assert sess.run(g, {idx: 1}) == 2.0
        with pytest.raises(errors.InvalidArgumentError) as e:
            sess.run(g, {idx: 7})
        assert "pick" in str(e.value) and "/job:local/replica:0/task:1" in str(e.value)
        assert sess.run(g, {idx: 2}) == 3.0  # the tasks keep serving


def test_unknown_job_fails_at_run_listing_jobs(make_cluster):
    cl = make_cluster(local=1).start_all()
    with tf.device("/job:nope/task:0"):
        v = tf.constant(1) + 1
    with tf.Session(cl.target("local", 0)) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="nope.*jobs: local"):
            sess.run(v)


def test_missing_task_not_used_by_the_graph_does_not_block(make_cluster):
    cl = make_cluster(worker=2, ps=1)
    cl.start("worker", 0)  # worker 1 and ps 0 never start
    with tf.device("/job:worker/task:0"):
        v = tf.constant(40) + 2
    with tf.Session(cl.target("worker", 0)) as sess:
        assert sess.run(v) == 42


def test_dead_task_is_reported_by_name(make_cluster):
    cl = make_cluster(worker=1, ps=1)
    cl.start("worker", 0)  # ps 0 is in the cluster but never started
    with tf.device("/job:ps/task:0"):
        w = tf.constant(3.0) + 1.0  # an op the ps must run (a constant would be copied over)
    with tf.device("/job:worker/task:0"):
        y = w * 2.0
    with tf.Session(cl.target("worker", 0)) as sess:
        with pytest.raises(errors.UnavailableError, match=r"/job:ps/replica:0/task:0.*" + cl.jobs["ps"][0]):
            sess.run(y)


def test_step_timeout_names_the_task(make_cluster):
    cl = make_cluster(worker=2)
    cl.start("worker", 0)
    frozen = cl.start("worker", 1)
    with tf.device("/job:worker/task:1"):
        a = tf.constant(1.0) + 1.0
    with tf.device("/job:worker/task:0"):
        b = a * 3.0
    with tf.Session(cl.target("worker", 0)) as sess:
        assert sess.run(b) == 6.0
        frozen.freeze()
        try:
            with pytest.raises((errors.DeadlineExceededError, errors.UnavailableError), match="task:1"):
                sess.run(b, options=tf.RunOptions(timeout_in_ms=300))
        finally:
            frozen.thaw()


def test_restarted_task_aborts_the_next_step_then_recovers(make_cluster):
    cl = make_cluster(worker=2).start_all()
    with tf.device("/job:worker/task:1"):
        a = tf.constant(5.0) * 2.0
    with tf.device("/job:worker/task:0"):
        b = a + 1.0
    with tf.Session(cl.target("worker", 0)) as sess:
        assert sess.run(b) == 11.0
        cl.tasks[("worker", 1)].kill()
        cl.start("worker", 1)
        with pytest.raises((errors.AbortedError, errors.UnavailableError)):
            sess.run(b)
        assert sess.run(b) == 11.0  # partitions registered afresh


def test_step_stats_cover_every_task(make_cluster):
    cl = make_cluster(local=2).start_all()
    x = tf.constant(2)
    with tf.device("/job:local/task:1"):
        y2 = x - 66
    with tf.device("/job:local/task:0"):
        y = x + 300 + y2
    md = tf.RunMetadata()
    with tf.Session(cl.target("local", 0)) as sess:
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    devices = {d.device for d in md.step_stats.dev_stats}
    assert devices == {"/job:local/replica:0/task:0/device:CPU:0", "/job:local/replica:0/task:1/device:CPU:0"}
    names = {n.node_name for d in md.step_stats.dev_stats for n in d.node_stats}
    assert "sub" in names and "add_1" in names


def test_malformed_messages_get_an_error_reply_and_the_server_keeps_serving(make_cluster):
    cl = make_cluster(local=1).start_all()
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect("tcp://" + cl.jobs["local"][0])
    try:
        for bad in ([b"\xff\xfe not json"], [b'{"type": "RunGraph", "id": 5}'], [b'{"type": "Nope", "id": 6}'],
                    [b'{"type": "Tensor", "id": 7, "t": {"@t": 3, "dtype": "float32", "shape": [4]}}']):
            s.send_multipart(bad)
            assert s.poll(5000), f"no reply to {bad!r}"
            reply = s.recv_multipart()
            assert b'"ok":false' in reply[0]
        x = tf.constant(20) + 22
        with tf.Session(cl.target("local", 0)) as sess:
            assert sess.run(x) == 42
    finally:
        s.close()


def test_port_in_use_is_a_clear_error():
    server = tf.train.Server.create_local_server()
    try:
        addr = server.target[len("grpc://"):]
        with pytest.raises(errors.OpError, match=addr.split(":")[1]):
            tf.train.Server({"local": [addr]}, job_name="local", task_index=0)
    finally:
        server.stop()


@pytest.mark.parametrize("shared_memory,ipc", [("1", "1"), ("0", "1"), ("0", "0")])
def test_large_tensors_cross_tasks_and_reach_the_client(make_cluster, monkeypatch, shared_memory, ipc):
    monkeypatch.setenv("DTF_SHM", shared_memory)  # task processes inherit it
    monkeypatch.setenv("DTF_IPC", ipc)
    cl = make_cluster(local=2).start_all()
    data = np.arange(3 << 20, dtype=np.float32)  # 12 MiB: several 4 MiB frames or one shm file
    with tf.device("/job:local/task:1"):
        v = tf.Variable(data)
        doubled = v * 2.0
    with tf.device("/job:local/task:0"):
        total = tf.reduce_sum(doubled[-2:])
        fed = tf.placeholder(tf.float32, [None])
    with tf.device("/job:local/task:1"):
        fed_back = fed + 1.0  # the feed goes client -> task 0 -> task 1 and back
    with tf.Session(cl.target("local", 0)) as sess:
        sess.run(v.initializer)
        assert sess.run(total) == pytest.approx(2.0 * (data[-1] + data[-2]))
        np.testing.assert_array_equal(sess.run(doubled), data * 2.0)
        np.testing.assert_array_equal(sess.run(fed_back, {fed: data}), data + 1.0)
    leftovers = [f for f in os.listdir("/dev/shm") if f.startswith("dtf-")] if os.path.isdir("/dev/shm") else []
    assert leftovers == []


def test_a_standalone_task_loads_its_cpu_loops_up_front_only_when_told_to(make_cluster, monkeypatch):
    """By default a task loads Numba's loops once numpy's stand-ins have cost enough: small
    steps leave it idle. DTF_PRELOAD_KERNELS=1 loads them as soon as it serves."""
    from dtf.wire import transport

    cl = make_cluster(ps=2)
    cl.start("ps", 0)
    monkeypatch.setenv("DTF_PRELOAD_KERNELS", "1")
    cl.start("ps", 1)
    client = transport.Client(None)
    try:
        g = tf.Graph()
        with g.as_default(), tf.device("/job:ps/task:0"):
            labels = tf.constant(np.arange(8) % 3)
            logits = tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3))
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        with tf.Session(cl.target("ps", 0), graph=g) as sess:
            for _ in range(5):
                sess.run(loss)
        assert client.call(cl.jobs["ps"][0], {"type": "Status"}, 10)["cpu_loops"] == "idle"
        deadline = time.monotonic() + 90
        state = None
        while time.monotonic() < deadline:
            state = client.call(cl.jobs["ps"][1], {"type": "Status"}, 10)["cpu_loops"]
            if state not in ("idle", "loading"):
                break
            time.sleep(0.1)
        assert state == "loaded"
    finally:
        client.close()


def test_timeline_of_a_two_task_step(make_cluster):
    """The trace of a step over two task processes: a lane per task, an arrow per transfer."""
    from dtf.client import timeline
    from tests.unit.test_timeline import check_chrome_trace

    cl = make_cluster(local=2).start_all()
    with tf.device("/job:local/task:1"):
        w = tf.Variable([1.0, 2.0], name="w")
    with tf.device("/job:local/task:0"):
        y = tf.reduce_sum(w * 3.0, name="y")
    md = tf.RunMetadata()
    with tf.Session(cl.target("local", 0)) as sess:
        sess.run(w.initializer)
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    events = check_chrome_trace(timeline.Timeline(md.step_stats).generate_chrome_trace_format())
    lanes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert sorted(lanes.values()) == [f"/job:local/replica:0/task:{i}/device:CPU:0 Compute" for i in (0, 1)]
    ops = [e for e in events if e["ph"] == "X"]
    sends = [e for e in ops if e["name"] == "_Send"]
    recvs = [e for e in ops if e["name"] == "_Recv"]
    assert sends and recvs
    assert {lanes[e["pid"]] for e in sends} == {"/job:local/replica:0/task:1/device:CPU:0 Compute"}
    assert {lanes[e["pid"]] for e in recvs} == {"/job:local/replica:0/task:0/device:CPU:0 Compute"}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    arrows = [(lanes[starts[e["id"]]["pid"]], lanes[e["pid"]]) for e in events if e["ph"] == "f"]
    assert ("/job:local/replica:0/task:1/device:CPU:0 Compute",
            "/job:local/replica:0/task:0/device:CPU:0 Compute") in arrows


WORKER_SCRIPT_LEAVING_ITS_SESSION_OPEN = """
import sys
import dtf as tf
jobs = {"ps": [sys.argv[1]], "worker": [sys.argv[2]]}
server = tf.train.Server(tf.train.ClusterSpec(jobs), job_name="worker", task_index=0)
with tf.device("/job:ps/task:0"):
    v = tf.Variable(1.0)
sess = tf.Session(server.target)  # never closed: its __del__ closes it as Python exits
sess.run(v.initializer)
print(sess.run(v + 1.0), flush=True)
"""


def test_a_script_that_leaves_its_session_open_exits(make_cluster, tmp_path):
    # The session's close at exit deregisters its graph on the ps from a pool thread,
    # which Python no longer starts then: the script used to hang there for ever.
    import subprocess

    cl = make_cluster(ps=1, worker=1)
    cl.start("ps", 0)
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT_LEAVING_ITS_SESSION_OPEN)
    out = subprocess.run([sys.executable, str(script), cl.jobs["ps"][0], cl.jobs["worker"][0]],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2.0"
