"""Clusters started by the real CLI are encrypted by default (CURVE with an owner-only key
file), plain mode stays on loopback unless allowed, and every command uses the keys."""
import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dtf.train.server import free_port
from dtf.wire import security, transport
from tests.cluster.test_cli import _kill, _recorded_pids, dtf, status_json
from tests.cluster.test_cli_ssh import REMOTE, remote, sshd  # noqa: F401 - fixtures

pytestmark = pytest.mark.cluster


def _write(directory: Path, security_section: str = ""):
    ports = [free_port(), free_port()]
    (directory / "cluster.toml").write_text(textwrap.dedent(f"""\
        [jobs]
        ps = ["127.0.0.1:{ports[0]}"]
        worker = ["127.0.0.1:{ports[1]}"]
        """) + security_section)


@pytest.fixture
def make_dir(tmp_path):
    """make_dir(security_section) -> a cluster directory (1 ps + 1 worker on free ports);
    whatever it started is stopped afterwards, then killed by PID."""
    made = []

    def make(security_section=""):
        directory = tmp_path / f"c{len(made)}"
        directory.mkdir()
        _write(directory, security_section)
        made.append(directory)
        return directory

    yield make
    for directory in made:
        pids = _recorded_pids(directory)
        dtf("down", "--grace", "3", cwd=directory, timeout=30)
        for pid in pids:
            _kill(pid)


def _ping(address, keys):
    client = transport.Client(keys)
    try:
        return client.ping(address, 1.0)
    finally:
        client.close()


def _environ(directory: Path, task: str) -> str:
    """The environment of the task process that `dtf up` recorded (e.g. task "ps-0")."""
    pid = json.loads((directory / ".dtf" / f"{task}.pid").read_text())["pid"]
    return Path(f"/proc/{pid}/environ").read_text(errors="replace")


CROSS_TASK_SCRIPT = """\
import json, os
import dtf as tf

cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
x = tf.constant(2)
with tf.device("/job:ps/task:0"):
    y2 = x - 66
with tf.device("/job:worker/task:0"):
    y = x + 300 + y2
with tf.Session("grpc://" + cluster["worker"][0]) as sess:
    print("answer", sess.run(y), "keys", os.environ.get("DTF_CLUSTER_KEYS"))
"""


def test_up_generates_owner_only_keys_and_every_command_uses_them(make_dir):
    d = make_dir()
    r = dtf("up", cwd=d)
    assert r.returncode == 0, r.stderr
    assert "encrypted (CURVE" in r.stdout
    key_file = d / ".dtf" / "cluster.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    keys = security.ClusterKeys.load(key_file)

    code, rows = status_json(d)
    assert code == 0 and all(row["state"] == "up" and row["secure"] for row in rows.values()), rows
    address = rows["ps:0"]["address"]
    assert f"DTF_CLUSTER_KEYS={key_file}" in _environ(d, "ps-0")
    with pytest.raises(transport.Unreachable):  # without the keys: not even a Ping
        _ping(address, None)
    assert _ping(address, keys)["task"] == "/job:ps/replica:0/task:0"

    (d / "job.py").write_text(CROSS_TASK_SCRIPT)
    r = dtf("run", "job.py", cwd=d)
    assert r.returncode == 0, r.stderr
    assert f"[worker:0] answer 238 keys {key_file}" in r.stdout and "not up" not in r.stdout

    r = dtf("hello", cwd=d)
    assert r.returncode == 0 and "= 238" in r.stdout and "temporary" not in r.stdout, r.stderr

    again = dtf("up", cwd=d)  # the same keys: the running tasks are recognised
    assert again.returncode == 0 and "already running" in again.stdout
    assert security.ClusterKeys.load(key_file) == keys


def test_status_with_other_keys_says_so_and_bad_key_files_are_refused(make_dir):
    d = make_dir()
    assert dtf("up", cwd=d).returncode == 0
    key_file = d / ".dtf" / "cluster.key"
    real = key_file.read_text()
    try:
        security.ClusterKeys.generate().save(key_file)
        r = dtf("status", "--timeout", "1", cwd=d)
        assert r.returncode == 1 and "0/2 tasks up" in r.stdout and "security: encrypted (CURVE" in r.stdout
        assert r.stdout.count("wrong cluster keys") == 2

        os.chmod(key_file, 0o644)
        for command in ("status", "up"):
            r = dtf(command, cwd=d)
            assert r.returncode == 2 and "chmod 600" in r.stderr and "Traceback" not in r.stderr
    finally:
        key_file.write_text(real)
        os.chmod(key_file, 0o600)
    assert status_json(d)[0] == 0


def test_named_key_file_missing_is_a_clear_error(make_dir):
    d = make_dir('[security]\nkeys = "secrets/cluster.key"\n')
    r = dtf("up", cwd=d)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert str(d / "secrets" / "cluster.key") in r.stderr and "No such file" in r.stderr
    assert not list((d / ".dtf").glob("*.pid"))

    (d / "secrets").mkdir()
    security.ClusterKeys.generate().save(d / "secrets" / "cluster.key")
    assert dtf("up", cwd=d).returncode == 0
    assert status_json(d)[0] == 0  # status asks with the named keys too
    assert f"DTF_CLUSTER_KEYS={d / 'secrets' / 'cluster.key'}" in _environ(d, "worker-0")
    assert not (d / ".dtf" / "cluster.key").exists()


def test_plain_mode_on_loopback(make_dir, monkeypatch):
    d = make_dir('[security]\nmode = "plain"\n')
    other = d / "stray.key"  # a key file inherited from the shell must not apply
    security.ClusterKeys.generate().save(other)
    r = dtf("up", cwd=d, env={security.ENV_KEYS: str(other)})
    assert r.returncode == 0, r.stderr
    assert "plain (unencrypted)" in r.stdout and not (d / ".dtf" / "cluster.key").exists()
    code, rows = status_json(d)
    assert code == 0 and not any(row["secure"] for row in rows.values())
    assert "DTF_CLUSTER_KEYS" not in _environ(d, "ps-0")
    assert _ping(rows["ps:0"]["address"], None)["task"] == "/job:ps/replica:0/task:0"
    (d / "job.py").write_text(CROSS_TASK_SCRIPT)
    r = dtf("run", "job.py", cwd=d, env={security.ENV_KEYS: str(other)})
    assert r.returncode == 0 and "[worker:0] answer 238 keys None" in r.stdout, r.stderr


# Runs the CLI with every way to reach the network disabled: any attempt fails loudly.
NO_NETWORK = """\
import socket, subprocess, sys
import zmq
def refuse(*args, **kwargs):
    raise SystemExit("NETWORK USED")
socket.socket.connect = socket.socket.connect_ex = socket.create_connection = refuse
socket.getaddrinfo = socket.gethostbyname = refuse
subprocess.Popen.__init__ = refuse
zmq.Socket.connect = zmq.Socket.bind = refuse
from dtf.cli.app import app
app(sys.argv[1:], prog_name="dtf")
"""


@pytest.mark.parametrize("command", [["up"], ["run", "job.py"]])
def test_plain_mode_refuses_non_loopback_before_any_network_use(tmp_path, command):
    port = free_port()
    (tmp_path / "cluster.toml").write_text(
        f'[jobs]\nps = ["127.0.0.1:{port}"]\nworker = ["198.51.100.7:{port}"]\n\n'
        '[security]\nmode = "plain"\n')
    (tmp_path / "job.py").write_text("")
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", NO_NETWORK, *command], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "allow_plain_remote" in r.stderr and "worker:0 (198.51.100.7" in r.stderr
    assert "NETWORK USED" not in r.stderr + r.stdout and "Traceback" not in r.stderr
    assert time.monotonic() - start < 30
    assert not (tmp_path / ".dtf").exists()


def test_remote_task_gets_an_owner_only_copy_of_the_keys(remote):  # noqa: F811 - fixture
    r = dtf("up", cwd=remote.dir)
    assert r.returncode == 0, r.stderr
    local = remote.dir / ".dtf" / "cluster.key"
    copy = remote.dir / "remote" / ".dtf" / "cluster.key"
    assert copy.read_text() == local.read_text()
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    code, rows = status_json(remote.dir)
    assert code == 0 and rows["worker:0"]["host"] == REMOTE and rows["worker:0"]["secure"]
    assert f"DTF_CLUSTER_KEYS={copy}" in _environ(remote.dir, "worker-0")
    with pytest.raises(transport.Unreachable):
        _ping(rows["worker:0"]["address"], None)
