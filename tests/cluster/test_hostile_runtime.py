"""Hostile and careless use of a running cluster: what a task must survive and release.

Real task processes on 127.0.0.1, stopped by PID (conftest); every wait is bounded.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import dtf as tf
from dtf.train.server import free_port
from dtf.wire import transport
from tests.cluster.conftest import REPO
from tests.cluster.test_faults import _cross_task_graph  # a partition on ps, worker 1, worker 0

pytestmark = pytest.mark.cluster

IDLE_TIMEOUT_S = 2.0


def _rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024.0


def _graphs(client, address):
    return client.call(address, {"type": "Status"}, 10)["graphs"]


def _wait_for(predicate, limit_s):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.fixture
def churn_cluster(make_cluster, monkeypatch):
    monkeypatch.setenv("DTF_SESSION_IDLE_TIMEOUT_S", str(IDLE_TIMEOUT_S))
    cl = make_cluster(ps=1, worker=2).start_all()
    client = transport.Client()
    yield cl, client
    client.close()


def test_closed_sessions_release_their_graphs_and_memory(churn_cluster):
    cl, client = churn_cluster
    addresses = [a for job in ("ps", "worker") for a in cl.jobs[job]]
    pids = [cl.tasks[k].pid for k in (("ps", 0), ("worker", 0), ("worker", 1))]

    def churn(n):
        for _ in range(n):
            with tf.Graph().as_default():
                v, out = _cross_task_graph()
                with tf.Session(cl.target("worker", 0)) as sess:
                    sess.run(v.initializer)
                    assert sess.run(out) == 3.0

    churn(20)  # warm-up: kernels loaded, handler threads started
    assert _wait_for(lambda: all(_graphs(client, a) == 0 for a in addresses), 5), \
        [_graphs(client, a) for a in addresses]
    rss0 = [_rss_mib(p) for p in pids]
    churn(100)
    assert _wait_for(lambda: all(_graphs(client, a) == 0 for a in addresses), 5), \
        [_graphs(client, a) for a in addresses]
    growth = [_rss_mib(p) - r for p, r in zip(pids, rss0)]
    assert max(growth) < 16.0, growth


def test_a_dead_clients_session_is_released_after_the_idle_timeout(churn_cluster):
    cl, client = churn_cluster
    script = textwrap.dedent(f"""
        import sys, time
        import dtf as tf
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:worker/task:1"):
            out = v * 2.0
        sess = tf.Session({cl.target("worker", 0)!r})
        sess.run(v.initializer)
        print(sess.run(out), flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "2.0"
        assert _graphs(client, cl.jobs["worker"][1]) == 1
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    # Closed by the master IDLE_TIMEOUT_S after its last use (checked every quarter of it).
    assert _wait_for(lambda: all(_graphs(client, a) == 0 for j in ("ps", "worker") for a in cl.jobs[j]),
                     IDLE_TIMEOUT_S + 8), [_graphs(client, a) for a in cl.jobs["worker"]]


def test_a_session_idle_past_the_timeout_goes_on_in_a_new_one(churn_cluster):
    cl, client = churn_cluster
    with tf.Graph().as_default():
        v, out = _cross_task_graph()
        with tf.Session(cl.target("worker", 0)) as sess:
            sess.run(v.initializer)
            assert sess.run(out) == 3.0
            assert _wait_for(lambda: _graphs(client, cl.jobs["worker"][1]) == 0, IDLE_TIMEOUT_S + 8)
            assert sess.run(out) == 3.0  # variables live on the ps: the new session sees them
            bigger = out * 10.0  # and the graph grows as usual
            assert sess.run(bigger) == 30.0


# Stopped longer than a ping's PING_EVERY_S + PING_TIMEOUT_S: the old code took the ps for
# dead by then and restored the last checkpoint, discarding the ps's newer values.
HANG_S = transport.PING_EVERY_S + transport.PING_TIMEOUT_S + 2.0


def test_a_hung_ps_that_answers_again_does_not_send_training_back(make_cluster, tmp_path):
    from tests.cluster.test_training import _example, _finish, _trainer_args, _wait_for_checkpoint, \
        _worker_config

    cl = make_cluster(ps=1, worker=1).start_all()
    ckpt = tmp_path / "ckpt"
    worker = _example("between_graph_async.py", *_trainer_args(ckpt, 300, 20, "--step_delay=0.01"),
                      tf_config=_worker_config(cl, 0))
    _wait_for_checkpoint(ckpt, 40, worker)
    ps = cl.tasks[("ps", 0)]
    ps.freeze()
    try:
        time.sleep(HANG_S)
    finally:
        ps.thaw()
    code, out = _finish(worker, timeout=60)
    assert code == 0, out
    assert "Restoring parameters" not in out and "preemption" not in out, out
    assert "final global step 300" in out, out


def test_a_session_waits_out_a_hung_master(make_cluster):
    import threading

    cl = make_cluster(worker=1).start_all()
    master = cl.tasks[("worker", 0)]
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = x * 2.0
        with tf.Session(cl.target("worker", 0)) as sess:
            assert sess.run(y, {x: 1.0}) == 2.0
            master.freeze()
            resume = threading.Timer(HANG_S, master.thaw)
            resume.start()
            try:
                assert sess.run(y, {x: 3.0}) == 6.0  # answered once the master runs again
            finally:
                resume.cancel()
                master.thaw()


PROGRESS_JOB = textwrap.dedent("""\
    import os, sys, time
    from dtf import progress
    print("endpoint", os.environ["DTF_PROGRESS"], flush=True)
    go = sys.argv[1]
    deadline = time.monotonic() + 20
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Reports go only over a connected pipe (the first ones may be dropped while it
    # connects): a report of a kind dtf run ignores tells when the pipe is up.
    while not progress.report("connected") and time.monotonic() < deadline + 20:
        time.sleep(0.15)
    # This run's own reports, with fields of the wrong type: dropped field by field.
    progress.report("step", global_step=3, last_step="many", local_step=[1], time="soon")
    progress.report("checkpoint", path={"a": 1}, global_step=float("nan"), time=None)
    time.sleep(2.5)  # past the plain view's few seconds between progress lines
    progress.report("step", global_step=7, last_step=7)
    time.sleep(0.5)
    print("job done", flush=True)
    """)


def test_dtf_run_takes_progress_only_from_its_replicas_and_survives_bad_reports(tmp_path):
    import zmq

    from tests.cluster.test_cli import _kill, _recorded_pids, dtf

    ports = [free_port() for _ in range(2)]
    (tmp_path / "cluster.toml").write_text(f'[jobs]\nps = ["127.0.0.1:{ports[0]}"]\n'
                                           f'worker = ["127.0.0.1:{ports[1]}"]\n')
    (tmp_path / "job.py").write_text(PROGRESS_JOB)
    go = tmp_path / "go"
    run = subprocess.Popen([sys.executable, "-m", "dtf", "run", "job.py", str(go)], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ctx = zmq.Context()
    try:
        endpoint = None
        deadline = time.monotonic() + 40
        while endpoint is None and time.monotonic() < deadline:
            line = run.stdout.readline()
            if not line:
                break
            if "endpoint " in line:
                endpoint = line.split("endpoint ", 1)[1].strip()
        assert endpoint, "the replica never started"
        forger = ctx.socket(zmq.PUSH)
        forger.setsockopt(zmq.LINGER, 1000)
        forger.connect(endpoint)  # another local process, without this run's token
        forger.send(b'{"kind": "checkpoint", "task": "evil", "path": "/forged", "time": "x"}')
        forger.send(b'{"kind": "step", "global_step": 999999, "token": "guess"}')
        forger.send(b"\xff not json")
        forger.send(b"[" * 100000)
        forger.close()
        time.sleep(0.5)
        go.write_text("")
        out, _ = run.communicate(timeout=40)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
        ctx.term()
        pids = _recorded_pids(tmp_path)
        dtf("down", "--grace", "3", cwd=tmp_path, timeout=30)
        for pid in pids:
            _kill(pid)
    assert run.returncode == 0, out
    assert "job done" in out and "1 replica(s) of job.py finished" in out, out
    assert "/forged" not in out and "999999" not in out and "evil" not in out, out
    assert "[checkpoint] worker:0 wrote {'a': 1} at global step None" in out, out
    assert "[progress] global step 3, " in out, out  # last_step="many" dropped
    assert "[progress] global step 7 / 7" in out, out


def test_wire_feeds_of_the_wrong_dtype_and_unknown_fetches_are_refused(make_cluster):
    import numpy as np

    from dtf.framework.graph_def import node_def_of

    cl = make_cluster(local=1).start_all()
    address = cl.jobs["local"][0]
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2], name="x")
        tf.identity(x * 2.0, name="y")
    client = transport.Client()
    try:
        session = client.call(address, {"type": "CreateSession", "config": {},
                                        "nodes": [node_def_of(op).to_dict() for op in g._nodes_in_order]},
                              10)["session"]

        def run(fetches, feeds):
            reply = client.call(address, {"type": "RunStep", "session": session, "fetches": fetches,
                                          "feeds": feeds, "targets": []}, 10)
            try:
                return transport.raise_for_error(reply)["outputs"]
            except tf.errors.OpError as e:
                return e

        ones = np.ones(2, np.float32)
        err = run(["y:0"], {"x:0": np.array([1, 2], np.int64)})  # TF's client casts; the wire must not
        assert isinstance(err, tf.errors.InvalidArgumentError), err
        assert "Expects arg[0] to be float but int64 is provided" in err.message and "x:0" in err.message
        err = run(["nope:0"], {"x:0": ones})
        assert isinstance(err, tf.errors.NotFoundError) and "nope:0" in err.message, err
        err = run(["y:7"], {"x:0": ones})  # TF: the node exists, the index does not
        assert isinstance(err, tf.errors.InvalidArgumentError) and "y:7" in err.message, err
        err = run(["y:0"], {"x:3": ones})
        assert isinstance(err, tf.errors.InvalidArgumentError) and "x:3" in err.message, err
        for _ in range(2):  # a planned step (the I/O thread's path) checks the same
            np.testing.assert_array_equal(run(["y:0"], {"x:0": ones})[0], [2.0, 2.0])
            err = run(["y:0"], {"x:0": np.array([1.0, 2.0])})
            assert isinstance(err, tf.errors.InvalidArgumentError) and "but double" in err.message, err
    finally:
        client.close()


def test_dtf_up_appends_to_a_restarted_tasks_log(tmp_path):
    from tests.cluster.test_cli import _kill, _recorded_pids, dtf

    (tmp_path / "cluster.toml").write_text(f'[jobs]\nworker = ["127.0.0.1:{free_port()}"]\n')
    try:
        assert dtf("up", cwd=tmp_path).returncode == 0
        (pid,) = _recorded_pids(tmp_path)
        _kill(pid)  # crashed
        r = dtf("up", cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        log = (tmp_path / ".dtf" / "logs" / "worker-0.log").read_text()
    finally:
        pids = _recorded_pids(tmp_path)
        dtf("down", "--grace", "3", cwd=tmp_path, timeout=30)
        for pid in pids:
            _kill(pid)
    first, restart, second = log.partition("---- dtf up: task worker:0 restarted at ")
    assert restart, log
    assert "listening on" in first and "listening on" in second, log


SYNC_CHIEF = textwrap.dedent("""\
    import sys
    import dtf as tf
    cluster = tf.train.ClusterSpec({"ps": [sys.argv[1]], "worker": sys.argv[2].split(",")})
    with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster)):
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(1.0, name="w")
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                             replicas_to_aggregate=2, total_num_replicas=2)
        train_op = opt.minimize(tf.square(w), global_step=step)
    # No initial tokens: the first update needs worker 1's gradient, so the chief waits for
    # it (a replica that died mid-step leaves the chief in exactly this state).
    hooks = [opt.make_session_run_hook(True, num_tokens=0), tf.train.StopAtStepHook(last_step=5)]
    with tf.train.MonitoredTrainingSession(master="grpc://" + sys.argv[2].split(",")[0],
                                           is_chief=True, hooks=hooks) as sess:
        print("training", flush=True)
        while not sess.should_stop():
            sess.run(train_op)
    """)


def test_sync_chief_names_a_dead_worker_soon(make_cluster):
    cl = make_cluster(ps=1, worker=2).start_all()
    # The token timeout is far beyond the test's bound: only the stall check can end it.
    env = dict(os.environ, PYTHONUNBUFFERED="1", DTF_SYNC_TOKEN_TIMEOUT_S="300",
               DTF_SYNC_STALL_CHECK_S="2")
    env.pop("TF_CONFIG", None)
    env.pop("DTF_PROGRESS", None)
    chief = subprocess.Popen([sys.executable, "-c", SYNC_CHIEF, cl.jobs["ps"][0], ",".join(cl.jobs["worker"])],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = ""
        while "training" not in line and chief.poll() is None:
            line = chief.stdout.readline()
        time.sleep(3)  # one stall check finds every task answering: the chief keeps waiting
        assert chief.poll() is None, chief.stdout.read()
        cl.tasks[("worker", 1)].kill()
        try:
            out, _ = chief.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the chief did not stop within 30 s of the worker's death")
    finally:
        if chief.poll() is None:
            chief.kill()
            chief.communicate()
    assert chief.returncode != 0
    last = out.strip().splitlines()[-1]
    assert last.startswith("dtf.framework.errors.UnavailableError: Synchronous training cannot go on"), out[-2000:]
    assert f"/job:worker/replica:0/task:1 at {cl.jobs['worker'][1]}" in last, out[-2000:]
