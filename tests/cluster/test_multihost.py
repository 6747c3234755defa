"""Cluster tier across hosts: tasks in separate network namespaces (tests/cluster/rig.py).

Every process here (tasks and clients) runs on a rig host with its own loopback, its own
abstract Unix sockets and its own /dev/shm, and reaches the others only over the rig's
bridge: what works here works between machines. Skipped where namespaces cannot be made.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from dtf.wire import endpoints, shm, transport
from tests.cluster.conftest import REPO
from tests.cluster import rig as rig_module
from tests.cluster.rig import PROFILES, make_rig  # noqa: F401  (make_rig is a fixture)
from tests.cluster.test_cli_ssh import WORKER_SCRIPT, _is_server
from tests.cluster.test_training import _finish, _trainer_args, _wait_for_checkpoint

pytestmark = pytest.mark.cluster

SSHD = "/usr/sbin/sshd"
PORT = 2222  # every host has its own port space
BIG = 1 << 20  # float32 elements: 4 MiB, above shm.MIN_BYTES, so same-host would use /dev/shm
# Low timeouts so a lost host is given up on quickly (see docs/cli.md).
FAST_ENV = {"DTF_HUNG_PEER_TIMEOUT_S": "5", "DTF_CONNECT_TIMEOUT_S": "20"}


class RigTask:
    """A task process (``dtf server``) on a rig host, stopped by PID."""

    def __init__(self, host, spec, job, index, env=None):
        self.host, self.job, self.index = host, job, index
        self.proc = host.popen(
            [sys.executable, "-m", "dtf", "server", f"--cluster_spec={spec}",
             f"--job_name={job}", f"--task_index={index}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO, text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1", **(env or {})))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if "listening on" in line:
                return
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"task {job}:{index} on {host} did not start: {line}{self.proc.stdout.read()}")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


@pytest.fixture
def tasks():
    started = []
    yield started
    for t in started:
        t.stop()


def _spec(jobs):
    return ",".join(f"{j}|{';'.join(f'{h.address}:{PORT}' for h in hosts)}" for j, hosts in jobs.items())


def _start(tasks, jobs, env=None):
    spec = _spec(jobs)
    for job, hosts in jobs.items():
        for i, h in enumerate(hosts):
            tasks.append(RigTask(h, spec, job, i, env))
    return spec


def _client(host, code, timeout=30, env=None):
    """Runs ``code`` in a fresh Python on ``host``; returns its stdout (fails on an error)."""
    r = host.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                 cwd=REPO, timeout=timeout, env=dict(os.environ, **(env or {})))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def _profile(rig, name):
    if name != "none":
        missing = rig.netem_missing()
        if missing:
            pytest.skip(f"latency profile {name} skipped: {missing}")
        rig.apply_profile(name)


@pytest.mark.parametrize("profile", ["none", *PROFILES])
def test_seed_238_across_hosts(make_rig, tasks, profile):
    rig = make_rig(3)
    _profile(rig, profile)
    h0, h1, client = rig.hosts
    _start(tasks, {"local": [h0, h1]})
    out = _client(client, f"""
        import dtf as tf
        x = tf.constant(2)
        with tf.device("/job:local/task:1"):
            y2 = x - 66
        with tf.device("/job:local/task:0"):
            y1 = x + 300
            y = y1 + y2
        with tf.Session("grpc://{h0.address}:{PORT}") as sess:
            print("answer", sess.run(y), sess.run(y))
    """)
    assert "answer 238 238" in out


def _tcp_peers(pid):
    """Remote 'a.b.c.d:port' of the established TCP connections in ``pid``'s namespace."""
    peers = set()
    with open(f"/proc/{pid}/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] != "01":  # ESTABLISHED
                continue
            ip_hex, port_hex = fields[2].split(":")
            ip = ".".join(str(b) for b in reversed(bytes.fromhex(ip_hex)))
            peers.add(f"{ip}:{int(port_hex, 16)}")
    return peers


def _lanes(pid):
    with open(f"/proc/{pid}/net/unix") as f:
        return [line.split()[-1] for line in f.readlines()[1:] if "dtf-lane" in line]


def test_tensors_between_hosts_go_over_tcp(make_rig, tasks):
    rig = make_rig(3)
    h0, h1, client = rig.hosts
    _start(tasks, {"local": [h0, h1]})
    # What decides the path: an address of another host is neither shm-local nor loopback.
    for h in (h0, h1):
        assert not shm.is_local(f"{h.address}:{PORT}")
        assert endpoints.loopback_port(f"{h.address}:{PORT}", endpoints.LOOPBACK_HOSTS) is None
    out = _client(client, f"""
        import numpy as np
        import dtf as tf
        scale = tf.placeholder(tf.float32, [])
        with tf.device("/job:local/task:1"):
            big = tf.fill([{BIG}], 1.0) * scale  # 4 MiB made on host 1
        with tf.device("/job:local/task:0"):
            total = tf.reduce_sum(big)  # ... consumed on host 0
        with tf.Session("grpc://{h0.address}:{PORT}") as sess:
            for _ in range(3):
                b, t = sess.run([big, total], {{scale: 2.0}})
                assert b.shape == ({BIG},) and np.all(b == 2.0) and t == 2.0 * {BIG}, (b, t)
        print("ok")
    """)
    assert "ok" in out
    task0, task1 = tasks
    # The tensor crossed the bridge: host 0 holds a TCP connection to host 1's task ...
    assert f"{h1.address}:{PORT}" in _tcp_peers(task0.pid)
    for t in tasks:
        # ... no lane was served (a lane is only for loopback addresses) ...
        assert _lanes(t.pid) == []
        # ... and nothing was written to shared memory on either host (each has its own
        # /dev/shm: had a sender used it, the receiver could not have read the tensor).
        assert [n for n in os.listdir(f"/proc/{t.pid}/root/dev/shm") if n.startswith("dtf-")] == []


def _train_on_three_hosts(rig, example, *extra):
    """Runs ``examples/<example>`` as 1 ps + 2 workers, one per rig host; the workers' output."""
    ps, w0, w1 = rig.hosts
    hosts = lambda hs: ",".join(f"{h.address}:{PORT}" for h in hs)  # noqa: E731
    args = [sys.executable, os.path.join(REPO, "examples", example), f"--ps_hosts={hosts([ps])}",
            f"--worker_hosts={hosts([w0, w1])}", "--max_wait_secs=25", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "DTF_PROGRESS")}
    env.update(PYTHONUNBUFFERED="1", DTF_SYNC_TOKEN_TIMEOUT_S="20")
    procs = []
    try:
        procs.append(ps.popen(args + ["--job_name=ps", "--task_index=0"], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for i, h in enumerate((w0, w1)):
            procs.append(h.popen(args + ["--job_name=worker", f"--task_index={i}"], cwd=REPO,
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs = [p.communicate(timeout=30)[0] for p in procs[1:]]
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)
    assert all(p.returncode == 0 for p in procs[1:]), outs
    return outs


def test_between_graph_async_training_on_three_hosts(make_rig, tmp_path):
    outs = _train_on_three_hosts(make_rig(3), "between_graph_async.py", "--last_step=100",
                                 f"--checkpoint_dir={tmp_path / 'ckpt'}", "--step_delay=0.02")
    # The chief trained to the last step (async: both workers may take the last one), and
    # both workers took steps of their own on the ps host's variables.
    final = re.search(r"final global step (\d+)", outs[0])
    assert final and 100 <= int(final.group(1)) <= 101, outs[0]
    for i, out in enumerate(outs):
        done = re.search(rf"worker {i} done after (\d+) local steps: global step \d+, loss (\S+)", out)
        assert done and int(done.group(1)) > 0 and float(done.group(2)) < 0.1, out


def test_between_graph_sync_training_on_three_hosts(make_rig):
    outs = _train_on_three_hosts(make_rig(3), "sync_training.py", "--last_step=100")
    done = [re.search(rf"worker {i} done: global step (\d+) after (\d+) local steps", out)
            for i, out in enumerate(outs)]
    assert all(done), outs
    # The chief ends at the last step, and every global step averaged 2 gradients (from
    # either worker: as in TF, a replica may give more than one while the other starts).
    assert int(done[0].group(1)) == 100, outs[0]
    assert sum(int(d.group(2)) for d in done) >= 2 * 100, outs


def test_vanished_host_is_named_in_the_error(make_rig, tasks):
    rig = make_rig(3)
    ps, worker, client = rig.hosts
    _start(tasks, {"ps": [ps], "worker": [worker]}, env=FAST_ENV)
    bound = transport.PING_EVERY_S + transport.PING_TIMEOUT_S + 10.0
    code = textwrap.dedent(f"""
        import sys, time
        import dtf as tf
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
        with tf.device("/job:worker/task:0"):
            out = v * 2.0 + 1.0
        with tf.Session("grpc://{worker.address}:{PORT}") as sess:
            sess.run(v.initializer)
            assert sess.run(out) == 3.0
            print("READY", flush=True)
            sys.stdin.readline()
            start = time.monotonic()
            while time.monotonic() - start < {bound}:
                try:
                    sess.run(out)
                except tf.errors.OpError as e:
                    print(type(e).__name__, round(time.monotonic() - start, 1), e.message, flush=True)
                    break
            else:
                print("NO ERROR", flush=True)
    """)
    proc = client.popen([sys.executable, "-c", code], cwd=REPO, text=True,
                        env=dict(os.environ, PYTHONUNBUFFERED="1", **FAST_ENV),
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        first = proc.stdout.readline()
        assert first.startswith("READY"), first + proc.stdout.read()
        ps.link(up=False)  # the ps host's cable is pulled: no RST, no FIN, just silence
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, _ = proc.communicate(timeout=bound + 10)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert out.startswith("UnavailableError"), out
    assert "/job:ps/replica:0/task:0" in out, out


def test_stale_cleanup_removes_only_dead_owners_rigs(make_rig):
    live = make_rig(1)  # skips where namespaces cannot be made
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale, other = f"{rig_module.PREFIX}{dead.pid}-feed00-h0", "dtfrigless-test-ns"
    for ns in (stale, other):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        assert rig_module.clean_stale() == [stale]
        left = rig_module.list_namespaces()
        assert stale not in left and other in left and live.hosts[0].ns in left
    finally:
        for ns in (stale, other):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_ps_killed_on_its_host_and_restarted_training_finishes_from_checkpoint(make_rig, tasks, tmp_path):
    rig = make_rig(3)
    ps, worker, trainer_host = rig.hosts
    jobs = {"ps": [ps], "worker": [worker]}
    spec = _start(tasks, jobs)
    ckpt = tmp_path / "ckpt"
    config = {"cluster": {j: [f"{h.address}:{PORT}" for h in hs] for j, hs in jobs.items()},
              "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"}
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "DTF_PROGRESS")}
    trainer = trainer_host.popen(
        [sys.executable, os.path.join(REPO, "examples", "between_graph_async.py"),
         *_trainer_args(ckpt, 150, 25, "--step_delay=0.01")],
        cwd=REPO, env=dict(env, PYTHONUNBUFFERED="1", TF_CONFIG=json.dumps(config)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        killed_after = _wait_for_checkpoint(ckpt, 50, trainer)
        tasks[0].stop()  # kill -9 of the ps process on its own host
        tasks[0] = RigTask(ps, spec, "ps", 0)  # the same address, fresh (empty) state
        code, out = _finish(trainer, timeout=30)
    finally:
        if trainer.poll() is None:
            os.kill(trainer.pid, signal.SIGKILL)
            trainer.wait(10)
    assert code == 0, out
    assert "preemption" in out and f"Restoring parameters from {ckpt}" in out, out
    assert "final global step 150" in out and killed_after >= 50, out


@pytest.fixture
def rig_sshd(make_rig, tmp_path):
    """A 3-host rig with an sshd on hosts 0 and 1 (port 22 of their own address) that accepts
    only a generated key; host 2 is where the dtf commands run."""
    if not os.path.exists(SSHD) or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        pytest.skip("needs OpenSSH (/usr/sbin/sshd, ssh, ssh-keygen): install openssh-server")
    rig = make_rig(3)
    d = tmp_path / "sshd"
    d.mkdir()
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)],
                       check=True, capture_output=True, timeout=30)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    daemons = []
    try:
        for h in rig.hosts[:2]:
            config = d / f"sshd_config_{h.address}"
            config.write_text(
                f"Port 22\nListenAddress {h.address}\nHostKey {d / 'host_key'}\n"
                f"AuthorizedKeysFile {d / 'authorized_keys'}\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\n"
                f"PidFile {d / f'sshd_{h.address}.pid'}\n")
            daemons.append(h.popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for h, daemon in zip(rig.hosts, daemons):
            deadline = time.monotonic() + 10
            while rig.hosts[2].run(["bash", "-c", f"exec 3<>/dev/tcp/{h.address}/22"], private_shm=False,
                                   capture_output=True).returncode != 0:
                assert daemon.poll() is None and time.monotonic() < deadline, "sshd did not start"
                time.sleep(0.1)
        yield rig, d / "client_key"
    finally:
        for daemon in daemons:  # the rig's teardown also kills what sshd started
            if daemon.poll() is None:
                os.kill(daemon.pid, signal.SIGKILL)
                daemon.wait(10)


def _net_namespace_inode(pid) -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def test_dtf_up_over_ssh_into_the_hosts_encrypted(rig_sshd, tmp_path):
    rig, key = rig_sshd
    h0, h1, here = rig.hosts
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    for h in (h0, h1):
        (tmp_path / f"remote-{h.address}").mkdir()
    hosts = "".join(f"""
[ssh.hosts."{h.address}"]
port = 22
identity_file = "{key}"
python = "{sys.executable}"
workdir = "{tmp_path / f'remote-{h.address}'}"
options = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
""" for h in (h0, h1))
    (cluster / "cluster.toml").write_text(
        f'[jobs]\nps = ["{h0.address}:{PORT}"]\nworker = ["{h1.address}:{PORT}"]\n{hosts}')
    (cluster / "job.py").write_text(WORKER_SCRIPT)  # 40.0 on the ps, + 2.0 on the worker
    env = {k: v for k, v in os.environ.items() if k not in ("TF_CONFIG", "DTF_CLUSTER_KEYS", "DTF_PROGRESS")}

    def dtf(*args):
        return here.run([sys.executable, "-m", "dtf", *args], cwd=cluster, env=env,
                        capture_output=True, text=True, timeout=60)

    try:
        r = dtf("up")
        assert r.returncode == 0 and r.stdout.count("started") == 2, r.stdout + r.stderr
        rows = {f"{row['job']}:{row['index']}": row for row in json.loads(dtf("status", "--json").stdout)}
        # Each task runs in its own host's namespace, started there by that host's sshd.
        for name, h in (("ps:0", h0), ("worker:0", h1)):
            assert rows[name]["state"] == "up" and rows[name]["host"] == h.address, rows
            assert _net_namespace_inode(rows[name]["pid"]) == os.stat(f"/run/netns/{h.ns}").st_ino
        r = dtf("run", "job.py")
        assert r.returncode == 0 and "[worker:0] answer 42.0" in r.stdout, r.stdout + r.stderr
        # The cluster is encrypted (CURVE, the default): a client on the third host without
        # the keys is refused.
        r = here.run([sys.executable, "-c", textwrap.dedent(f"""
            import dtf as tf
            try:
                with tf.Session("grpc://{h1.address}:{PORT}") as sess:
                    sess.run(tf.constant(1.0))
            except tf.errors.UnauthenticatedError as e:
                print("refused", e.message)
        """)], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=30)
        assert "refused" in r.stdout, r.stdout + r.stderr
        r = dtf("down")
        assert r.returncode == 0 and f"on {h1.address}, over ssh" in r.stdout, r.stdout + r.stderr
        assert not any(_is_server(row["pid"]) for row in rows.values())
    finally:
        if (cluster / ".dtf").exists():
            dtf("down", "--grace", "3")
