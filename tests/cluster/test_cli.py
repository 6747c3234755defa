"""The dtf command, through the real CLI (``python -m dtf``), each test in a temporary
directory with its own cluster.toml on free ports. Every test stops what it started."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dtf.train.server import free_port

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def dtf(*args, cwd, timeout=TIMEOUT_S, env=None):
    return subprocess.run([sys.executable, "-m", "dtf", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def _recorded_pids(directory: Path) -> list:
    pids = []
    for f in (directory / ".dtf").glob("*.pid"):
        try:
            pids.append(json.loads(f.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            pass
    return pids


def _kill(pid):
    try:
        if "server" in Path(f"/proc/{pid}/cmdline").read_text():
            os.kill(pid, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass


@pytest.fixture
def cluster_dir(tmp_path):
    """A directory with a 1 ps + 2 workers cluster.toml on free ports; torn down after."""
    ports = [free_port() for _ in range(3)]
    (tmp_path / "cluster.toml").write_text(textwrap.dedent(f"""\
        [jobs]
        ps = ["127.0.0.1:{ports[0]}"]
        worker = ["127.0.0.1:{ports[1]}", "127.0.0.1:{ports[2]}"]

        [env]
        DTF_TEST_MARKER = "1"
        """))
    pids = []
    try:
        yield tmp_path
    finally:
        pids = _recorded_pids(tmp_path)
        dtf("down", "--grace", "3", cwd=tmp_path, timeout=30)
        for pid in pids:
            _kill(pid)


def status_json(cwd):
    r = dtf("status", "--json", cwd=cwd)
    return r.returncode, {f"{row['job']}:{row['index']}": row for row in json.loads(r.stdout)}


@pytest.mark.cluster
def test_up_status_down(cluster_dir):
    r = dtf("up", cwd=cluster_dir)
    assert r.returncode == 0, r.stderr
    assert "started" in r.stdout and "worker:1" in r.stdout
    code, rows = status_json(cluster_dir)
    assert code == 0
    assert set(rows) == {"ps:0", "worker:0", "worker:1"}
    assert all(row["state"] == "up" and isinstance(row["pid"], int) for row in rows.values())
    pids = {name: row["pid"] for name, row in rows.items()}

    again = dtf("up", cwd=cluster_dir)  # starts nothing new
    assert again.returncode == 0 and "already running" in again.stdout
    assert {n: r["pid"] for n, r in status_json(cluster_dir)[1].items()} == pids

    table = dtf("status", cwd=cluster_dir)
    assert table.returncode == 0 and "3/3 tasks up" in table.stdout

    r = dtf("down", cwd=cluster_dir)
    assert r.returncode == 0, r.stderr
    code, rows = status_json(cluster_dir)
    assert code == 1 and all(row["state"] == "down" for row in rows.values())
    for row in rows.values():  # the ports are free again
        with socket.socket() as s:
            s.bind(("127.0.0.1", int(row["address"].rpartition(":")[2])))


@pytest.mark.cluster
def test_status_exits_1_when_a_task_dies_and_logs(cluster_dir):
    assert dtf("up", cwd=cluster_dir).returncode == 0
    _, rows = status_json(cluster_dir)
    os.kill(rows["worker:1"]["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        code, rows = status_json(cluster_dir)
        if code == 1:
            break
    assert code == 1 and rows["worker:1"]["state"] == "down" and rows["worker:0"]["state"] == "up"
    assert rows["worker:0"]["gpus"] == 0

    # `dtf up` restarts only the dead task.
    old_pid = rows["worker:0"]["pid"]
    assert dtf("up", cwd=cluster_dir).returncode == 0
    code, rows = status_json(cluster_dir)
    assert code == 0 and rows["worker:1"]["state"] == "up" and rows["worker:0"]["pid"] == old_pid

    r = dtf("logs", "worker:0", cwd=cluster_dir)
    assert r.returncode == 0 and "/job:worker/task:0 listening on" in r.stdout
    assert dtf("logs", "worker:7", cwd=cluster_dir).returncode == 2
    follow = subprocess.Popen([sys.executable, "-m", "dtf", "logs", "-f", "ps:0"], cwd=cluster_dir,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert "/job:ps/task:0 listening on" in follow.stdout.readline()
    finally:
        follow.kill()
        follow.wait(10)
    assert dtf("down", cwd=cluster_dir).returncode == 0


@pytest.mark.cluster
def test_up_fails_naming_the_task_when_its_port_is_taken(cluster_dir):
    text = (cluster_dir / "cluster.toml").read_text()
    port = int(text.split('worker = ["127.0.0.1:')[1].split('"')[0])
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        r = dtf("up", "--timeout", "20", cwd=cluster_dir)
    assert r.returncode != 0
    assert "worker:0" in r.stderr and "failed to start" in r.stderr
    assert "already in use" in r.stderr  # the tail of its log
    assert "Traceback" not in r.stderr


JOB_SCRIPT = """\
import json, os, sys, time
from dtf import progress

task = json.loads(os.environ["TF_CONFIG"])["task"]
cluster = json.loads(os.environ["TF_CONFIG"])["cluster"]
print("hello from", task["type"], task["index"], "of", len(cluster["worker"]), "workers",
      os.environ.get("DTF_TEST_MARKER"))
for step in range(1, 6):
    progress.report("step", global_step=step, last_step=5)
    time.sleep(0.12)
progress.report("checkpoint", path="/tmp/model.ckpt-5", global_step=5)
print("args", sys.argv[1:])
sys.exit(3 if str(task["index"]) == os.environ.get("FAIL_INDEX") else 0)
"""


@pytest.mark.cluster
def test_run_replicas(cluster_dir):
    (cluster_dir / "job.py").write_text(JOB_SCRIPT)
    r = dtf("run", "job.py", "--lr", "0.1", cwd=cluster_dir)
    assert r.returncode == 0, r.stderr
    assert "not up: starting it" in r.stdout
    assert "[worker:0] hello from worker 0 of 2 workers 1" in r.stdout
    assert "[worker:1] hello from worker 1 of 2 workers 1" in r.stdout
    assert "[worker:1] args ['--lr', '0.1']" in r.stdout
    assert "[checkpoint] worker:" in r.stdout and "/tmp/model.ckpt-5" in r.stdout
    assert "[progress] global step " in r.stdout and " / 5, " in r.stdout

    r = dtf("run", "--on", "worker:1", "job.py", cwd=cluster_dir)
    assert r.returncode == 0 and "[worker:1]" in r.stdout and "[worker:0]" not in r.stdout
    assert "not up" not in r.stdout

    r = dtf("run", "job.py", cwd=cluster_dir, env={"FAIL_INDEX": "1"})
    assert r.returncode == 1
    assert "worker:1 failed (exit code 3)" in r.stderr and "worker:0 failed" not in r.stderr
    assert dtf("run", "job.py", "--on", "chief", cwd=cluster_dir).returncode == 2


@pytest.mark.cluster
def test_hello_temporary_and_on_a_running_cluster(tmp_path, cluster_dir):
    r = dtf("hello", cwd=tmp_path / "..")  # no cluster.toml there: in-process cluster
    assert r.returncode == 0, r.stderr
    assert "Hello, distributed TensorFlow!" in r.stdout and "= 238" in r.stdout
    assert "temporary in-process cluster" in r.stdout
    assert dtf("up", cwd=cluster_dir).returncode == 0
    r = dtf("hello", cwd=cluster_dir)
    assert r.returncode == 0, r.stderr
    assert "Hello, distributed TensorFlow!" in r.stdout and "= 238" in r.stdout
    assert f"cluster {cluster_dir / 'cluster.toml'}" in r.stdout


@pytest.mark.cluster
def test_server_with_classic_flags(tmp_path):
    ports = [free_port(), free_port()]
    spec = f"worker|127.0.0.1:{ports[0]};127.0.0.1:{ports[1]}"
    (tmp_path / "cluster.toml").write_text(
        f'[jobs]\nworker = ["127.0.0.1:{ports[0]}", "127.0.0.1:{ports[1]}"]\n')
    proc = subprocess.Popen([sys.executable, "-m", "dtf", "server", f"--cluster_spec={spec}",
                             "--job_name=worker", "--task_index=1"], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert f"/job:worker/task:1 listening on 127.0.0.1:{ports[1]}" in proc.stdout.readline()
        deadline = time.monotonic() + 10  # a busy machine may miss one status probe
        while True:
            code, rows = status_json(tmp_path)
            if rows["worker:1"]["state"] == "up" or time.monotonic() > deadline:
                break
        assert code == 1 and rows["worker:1"]["state"] == "up" and rows["worker:0"]["state"] == "down"
        assert rows["worker:1"]["pid"] == proc.pid
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        proc.kill()
        proc.wait(10)
    bad = dtf("server", "--cluster_spec=worker|nope", "--job_name=worker", cwd=tmp_path)
    assert bad.returncode == 2 and "bad --cluster_spec" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.cluster
def test_server_stops_on_sigterm_sent_as_it_starts_serving(tmp_path):
    """SIGTERM right after the ready line used to deadlock one server in about twenty: the
    handler set an Event whose lock the main thread held inside Event.wait."""
    ports = [free_port() for _ in range(4)]
    spec = "worker|" + ";".join(f"127.0.0.1:{p}" for p in ports)
    procs = [subprocess.Popen([sys.executable, "-m", "dtf", "server", f"--cluster_spec={spec}",
                               "--job_name=worker", f"--task_index={i}"], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True) for i in range(len(ports))]
    try:
        for proc in procs:
            assert "listening on" in proc.stdout.readline()
            proc.send_signal(signal.SIGTERM)
        for i, proc in enumerate(procs):
            try:
                assert proc.wait(20) == 0, f"worker:{i} exited with {proc.returncode}"
            except subprocess.TimeoutExpired:
                pytest.fail(f"worker:{i} (pid {proc.pid}) did not stop within 20 s of SIGTERM")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


@pytest.mark.cluster
def test_status_does_not_load_numba(cluster_dir):
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "dtf", "status"], cwd=cluster_dir,
                       capture_output=True, text=True, timeout=TIMEOUT_S)
    assert r.returncode == 1  # nothing is up
    assert "dtf.cli.status" in r.stderr and "numba" not in r.stderr


def test_completions_are_up_to_date(tmp_path):
    script = REPO / "completions" / "generate.sh"
    subprocess.run(["bash", str(script), str(tmp_path)], check=True, timeout=TIMEOUT_S,
                   env={**os.environ, "PYTHON": sys.executable})
    for name in ("dtf.bash", "_dtf", "dtf.fish"):
        assert (tmp_path / name).read_text() == (REPO / "completions" / name).read_text(), \
            f"completions/{name} is stale: run completions/generate.sh"


@pytest.mark.cluster
def test_run_trace_writes_one_global_step_as_a_chrome_trace(cluster_dir, tmp_path_factory):
    from tests.unit.test_timeline import check_chrome_trace

    example = str(REPO / "examples" / "between_graph_async.py")
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    (cluster_dir / "trace-step-12.json").write_text("an old file: replaced")
    r = dtf("run", example, "--trace", "12", "--", "--last_step", "30", "--checkpoint_dir",
            str(checkpoints), cwd=cluster_dir, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    out = cluster_dir / "trace-step-12.json"
    assert f"trace of global step 12 written to {out}" in r.stdout
    traced = re.search(r"\[trace\] (worker:[01]) traced global step (\d+) into ", r.stdout)
    assert traced and int(traced.group(2)) >= 12, r.stdout
    events = check_chrome_trace(out.read_text())
    lanes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    worker = f"/job:worker/replica:0/task:{traced.group(1)[-1]}/device:CPU:0 Compute"
    assert set(lanes.values()) == {"/job:ps/replica:0/task:0/device:CPU:0 Compute", worker}
    ops = [e for e in events if e["ph"] == "X"]
    assert any(e["args"]["name"].startswith("GradientDescent") for e in ops)
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    arrows = {(lanes[starts[e["id"]]["pid"]], lanes[e["pid"]]) for e in events if e["ph"] == "f"}
    assert {(worker, "/job:ps/replica:0/task:0/device:CPU:0 Compute"),
            ("/job:ps/replica:0/task:0/device:CPU:0 Compute", worker)} <= arrows
    assert not list(cluster_dir.glob(".trace-*"))  # the replicas' own files are gone

    custom = cluster_dir / "t.json"
    r = dtf("run", example, "--trace", "1000", "--trace-out", str(custom), "--", "--last_step", "35",
            "--checkpoint_dir", str(checkpoints), cwd=cluster_dir, timeout=120)
    assert r.returncode == 0 and not custom.exists()
    assert "warning: no replica traced global step 1000" in r.stdout
    assert dtf("run", example, "--trace-out", "x.json", cwd=cluster_dir).returncode == 2
