"""Remote tasks started and stopped over ssh, against a real sshd that the test starts.

The "remote" host is 127.0.0.2: loopback on Linux, yet not a host dtf treats as local, so
every remote step (start, watch, logs, stop) really goes through the system ssh client."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from dtf.train.server import free_port
from tests.cluster.test_cli import _kill, _recorded_pids, dtf, status_json

pytestmark = pytest.mark.cluster

SSHD = "/usr/sbin/sshd"
REMOTE = "127.0.0.2"


def _keygen(path: Path):
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _listening(host, port) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture
def sshd(tmp_path):
    """An sshd on a free port of 127.0.0.1 and 127.0.0.2 that accepts only a generated key."""
    if not os.path.exists(SSHD) or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        pytest.skip("needs OpenSSH (/usr/sbin/sshd, ssh, ssh-keygen): install openssh-server")
    d = tmp_path / "sshd"
    d.mkdir()
    for name in ("host_key", "client_key", "stranger_key"):
        _keygen(d / name)
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    port = free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nListenAddress {REMOTE}\nHostKey {d / 'host_key'}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\n"
        f"PidFile {d / 'sshd.pid'}\n")
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    with open(d / "sshd.log", "wb") as log:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while not _listening(REMOTE, port):
            assert proc.poll() is None and time.monotonic() < deadline, \
                f"sshd did not start: {(d / 'sshd.log').read_text()}"
            time.sleep(0.05)
        yield SimpleNamespace(port=port, key=d / "client_key", stranger=d / "stranger_key")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def write_cluster(directory: Path, sshd, ports, key=None, python=sys.executable):
    """1 ps here + 1 worker on the "remote" host, reached through ``sshd``."""
    (directory / "remote").mkdir(exist_ok=True)
    (directory / "cluster.toml").write_text(f"""\
[jobs]
ps = ["127.0.0.1:{ports[0]}"]
worker = ["{REMOTE}:{ports[1]}"]

[env]
DTF_TEST_MARKER = "remote"

[ssh.hosts."{REMOTE}"]
port = {sshd.port}
identity_file = "{key or sshd.key}"
python = "{python}"
workdir = "{directory / 'remote'}"
options = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
           "-o", "LogLevel=ERROR"]
""")


@pytest.fixture
def remote(tmp_path, sshd):
    """A cluster directory for ``sshd`` (``.write(key=, python=)`` changes its ssh settings);
    everything it started is stopped afterwards, then killed by PID if still there."""
    directory = tmp_path / "cluster"
    directory.mkdir()
    ports = (free_port(), free_port())
    setup = SimpleNamespace(dir=directory, write=lambda **kw: write_cluster(directory, sshd, ports, **kw))
    setup.write()
    try:
        yield setup
    finally:
        pids = _recorded_pids(directory)
        setup.write()  # the good key and python, whatever the test set
        dtf("down", "--grace", "3", cwd=directory, timeout=60)
        for pid in pids:
            _kill(pid)


WORKER_SCRIPT = """\
import json, os
import dtf as tf

cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
with tf.device("/job:ps/task:0"):
    a = tf.constant(40.0)
with tf.device("/job:worker/task:0"):
    b = a + 2.0
with tf.Session("grpc://" + cluster["worker"][0]) as sess:
    print("answer", sess.run(b))
"""


def _is_server(pid) -> bool:
    try:
        return "server" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def test_remote_task_up_status_run_logs_down(remote):
    remote_dir = remote.dir
    r = dtf("up", cwd=remote_dir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("started") == 2 and f"{REMOTE}:" in r.stdout

    code, rows = status_json(remote_dir)
    assert code == 0, rows
    worker = rows["worker:0"]
    assert worker["state"] == "up" and worker["host"] == REMOTE and isinstance(worker["pid"], int)
    pid, port = worker["pid"], int(worker["address"].rpartition(":")[2])
    record = json.loads((remote_dir / ".dtf" / "worker-0.pid").read_text())
    assert record["host"] == REMOTE and record["pid"] == pid
    # Started over ssh with the classic flags (local tasks get --job/--task -c cluster.toml).
    cmdline = Path(f"/proc/{pid}/cmdline").read_text()
    assert "--cluster_spec=" in cmdline and "--job_name=worker" in cmdline
    assert "DTF_TEST_MARKER=remote" in Path(f"/proc/{pid}/environ").read_text()
    assert "already running" in dtf("up", cwd=remote_dir).stdout

    (remote_dir / "job.py").write_text(WORKER_SCRIPT)
    r = dtf("run", "job.py", cwd=remote_dir)
    assert r.returncode == 0, r.stderr
    assert "[worker:0] answer 42.0" in r.stdout and "not up" not in r.stdout

    r = dtf("logs", "worker:0", cwd=remote_dir)
    assert r.returncode == 0 and "/job:worker/task:0 listening on" in r.stdout, r.stderr
    assert (remote_dir / "remote" / ".dtf" / "logs" / "worker-0.log").exists()

    r = dtf("down", cwd=remote_dir)
    assert r.returncode == 0, r.stderr
    assert f"pid {pid} on {REMOTE}, over ssh" in r.stdout
    assert not _is_server(pid)
    with socket.socket() as s:  # its port is free again
        s.bind((REMOTE, port))
    assert status_json(remote_dir)[0] == 1
    assert not (remote_dir / ".dtf" / "worker-0.pid").exists()


def test_remote_errors_name_the_task_host_and_ssh_message(remote, sshd):
    remote_dir = remote.dir
    remote.write(key=sshd.stranger)
    r = dtf("up", "--timeout", "20", cwd=remote_dir)
    assert r.returncode != 0
    assert "worker:0" in r.stderr and REMOTE in r.stderr and "Permission denied" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (remote_dir / ".dtf" / "worker-0.pid").exists()
    r = dtf("logs", "worker:0", cwd=remote_dir)
    assert r.returncode == 1 and "Permission denied" in r.stderr

    remote.write(python="/nonexistent/python3")
    r = dtf("up", "--timeout", "20", cwd=remote_dir)
    assert r.returncode != 0 and "worker:0" in r.stderr
    assert "python /nonexistent/python3 not found" in r.stderr and "Traceback" not in r.stderr

    # A python without dtf: the process starts, exits, and the remote log's end is shown.
    bare = shutil.which("python3", path="/usr/bin:/bin")
    if bare and subprocess.run([bare, "-c", "import dtf"], capture_output=True, cwd="/",
                               timeout=30).returncode != 0:
        remote.write(python=bare)
        r = dtf("up", "--timeout", "20", cwd=remote_dir)
        assert r.returncode != 0 and "worker:0" in r.stderr and "exited" in r.stderr
        assert "No module named dtf" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_host_is_named_with_ssh_message(tmp_path):
    """No sshd needed: nobody listens on the ssh port of 127.0.0.3, so ssh is refused at once."""
    if not shutil.which("ssh"):
        pytest.skip("needs the ssh client")
    (tmp_path / "cluster.toml").write_text(
        f'[jobs]\nworker = ["127.0.0.3:{free_port()}"]\n\n'
        f'[ssh.hosts."127.0.0.3"]\nport = {free_port()}\n')
    r = dtf("up", "--timeout", "20", cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "worker:0" in r.stderr and "127.0.0.3" in r.stderr and "Connection refused" in r.stderr
    assert not list((tmp_path / ".dtf").glob("*.pid"))
