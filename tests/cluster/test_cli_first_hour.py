"""What a new user meets first, through the real CLI and real programs started by hand: a
script finding the keys of the `dtf up` cluster it sits in, clear refusals, whole-or-nothing
starts, argument errors, help and completion."""
import os
import re
import socket
import subprocess
import sys

import pytest

from dtf.wire import security
from tests.cluster.test_cli import REPO, TIMEOUT_S, cluster_dir, dtf, status_json  # noqa: F401

pytestmark = pytest.mark.cluster

BY_HAND = """\
import sys
import dtf as tf

with tf.device("/job:worker/task:1"):
    y = tf.constant(2) + 236
with tf.Session("grpc://{address}") as sess:
    print("answer", sess.run(y))
"""

MONITORED = """\
import dtf as tf

with tf.device("/job:ps/task:0"):
    step = tf.train.get_or_create_global_step()
with tf.device("/job:worker/task:0"):
    bump = tf.assign_add(step, 1)
with tf.train.MonitoredTrainingSession(master="grpc://{address}", is_chief=True) as sess:
    print("step", sess.run(bump))
"""


def _addresses(directory):
    text = (directory / "cluster.toml").read_text()
    return [part.split('"')[0] for part in text.split('"127.0.0.1:')[1:]]


def _python(script, cwd, env=None):
    environ = {k: v for k, v in os.environ.items() if k != "DTF_CLUSTER_KEYS"}
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env={**environ, **(env or {})})


def test_a_script_run_by_hand_finds_the_keys_or_says_what_to_do(cluster_dir, tmp_path_factory):
    assert dtf("up", cwd=cluster_dir).returncode == 0
    worker0 = "127.0.0.1:" + _addresses(cluster_dir)[1]
    script = cluster_dir / "by_hand.py"
    script.write_text(BY_HAND.format(address=worker0))
    below = cluster_dir / "sub" / "dir"
    below.mkdir(parents=True)
    for where in (cluster_dir, below):  # in or below the cluster's directory: its keys
        r = _python(script, where)
        assert r.returncode == 0 and "answer 238" in r.stdout, r.stderr

    elsewhere = tmp_path_factory.mktemp("elsewhere")
    r = _python(script, elsewhere)  # no keys to be found: refused with what to do
    assert r.returncode == 1
    message = r.stderr.strip().splitlines()[-1]
    assert message.startswith("dtf.framework.errors.UnauthenticatedError: ")
    assert f"The task at {worker0} is encrypted" in message
    assert "dtf run script.py" in message and "DTF_CLUSTER_KEYS" in message
    assert "waiting for the master" not in r.stderr and "is its server running" not in r.stderr

    other = elsewhere / "other.key"
    security.ClusterKeys.generate().save(other)
    monitored = cluster_dir / "monitored.py"
    monitored.write_text(MONITORED.format(address=worker0))
    for program in (script, monitored):  # other keys: refused, and never "wait longer"
        r = _python(program, elsewhere, env={"DTF_CLUSTER_KEYS": str(other)})
        assert r.returncode == 1
        assert "UnauthenticatedError" in r.stderr and "encrypted with other cluster keys" in r.stderr
        assert str(other) in r.stderr
        assert "DTF_RECOVERY_TIMEOUT_S" not in r.stderr and "wait longer" not in r.stderr
    r = _python(monitored, cluster_dir)
    assert r.returncode == 0 and "step 1" in r.stdout, r.stderr


JSON_FIELDS = {"job", "index", "address", "state", "pid", "host", "secure", "uptime_s", "max_rss_kb",
               "gpus", "sessions", "steps", "graphs", "variables", "messages", "incarnation", "last_error"}


def test_a_failed_up_starts_nothing_and_status_tells_squatters_from_wrong_keys(cluster_dir):
    ps, worker0, worker1 = _addresses(cluster_dir)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", int(worker0)))
        squatter.listen()
        r = dtf("up", "--timeout", "20", cwd=cluster_dir)
        assert r.returncode == 1
        assert "worker:0" in r.stderr and "failed to start" in r.stderr
        assert "Stopped again the tasks it had started (ps:0, worker:1)" in r.stderr
        code, rows = status_json(cluster_dir)
        assert code == 1 and all(row["state"] == "down" for row in rows.values())
        assert rows["worker:0"]["reason"] == "not a dtf task: another program holds its port"
        assert rows["ps:0"]["reason"] == rows["worker:1"]["reason"] == "nothing listens on its port"
    assert not list((cluster_dir / ".dtf").glob("*.pid"))

    assert dtf("up", cwd=cluster_dir).returncode == 0
    code, rows = status_json(cluster_dir)  # --json keeps every field the table leaves out
    assert code == 0 and all(set(row) >= JSON_FIELDS for row in rows.values())
    key_file = cluster_dir / ".dtf" / "cluster.key"
    real = key_file.read_text()
    try:
        security.ClusterKeys.generate().save(key_file)
        code, rows = status_json(cluster_dir)
        assert code == 1
        assert {row["reason"] for row in rows.values()} == {"wrong cluster keys: a task encrypted with other keys"}
    finally:
        key_file.write_text(real)
    assert status_json(cluster_dir)[0] == 0


def test_task_arguments_are_blamed_on_the_argument(cluster_dir):
    (cluster_dir / "job.py").write_text("print('hi')\n")
    for args in (("logs", "ps:9"), ("run", "job.py", "--on", "worker:5"), ("logs", "chief:0")):
        r = dtf(*args, cwd=cluster_dir)
        assert r.returncode == 2, r.stderr
        assert "Bad cluster config" not in r.stderr and "Traceback" not in r.stderr
    r = dtf("logs", "ps:9", cwd=cluster_dir)
    assert "no task 'ps:9'" in r.stderr and "ps:0" in r.stderr
    r = dtf("run", "job.py", "--on", "worker:5", cwd=cluster_dir)
    assert "--on worker:5: no task 'worker:5'" in r.stderr and "worker:0, worker:1" in r.stderr


def test_short_help_version_and_uncut_descriptions(tmp_path):
    from importlib.metadata import version

    for flag in ("-h", "--help"):
        r = dtf(flag, cwd=tmp_path)
        assert r.returncode == 0 and "Usage: dtf" in r.stdout
        commands = r.stdout.split("Commands:")[1]
        assert "..." not in commands and commands.count("\n  ") == 7
    r = dtf("--help", cwd=tmp_path)
    assert "Show every task: up or down, pid, uptime, memory, steps served." in r.stdout
    r = dtf("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"dtf {version('dtf')}"
    r = dtf("status", "-h", cwd=tmp_path)
    assert r.returncode == 0 and "--json" in r.stdout


def _complete(words: str, cwd):
    line = f"dtf {words}"
    env = {"_DTF_COMPLETE": "complete_bash", "COMP_WORDS": line,
           "COMP_CWORD": str(len(line.split()) - (0 if line.endswith(" ") else 1))}
    return dtf(cwd=cwd, env=env).stdout.split()


def test_bash_completion_offers_the_tasks_of_cluster_toml(cluster_dir, tmp_path_factory):
    assert _complete("logs ", cluster_dir) == ["ps:0", "worker:0", "worker:1"]
    assert _complete("logs w", cluster_dir) == ["worker:0", "worker:1"]
    assert _complete("run job.py --on ", cluster_dir) == ["ps", "ps:0", "worker", "worker:0", "worker:1"]
    assert _complete("logs ", tmp_path_factory.mktemp("no_cluster")) == []


FAILING_REPLICA = """\
import json, os, sys, time

index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
if index == 1:
    print("worker 1 about to fail", flush=True)
    raise ValueError("boom at step 3")
print("worker 0 started", flush=True)
deadline = time.monotonic() + float(os.environ["WORKER0_SECONDS"])
while time.monotonic() < deadline:
    time.sleep(0.05)
print("worker 0 finished", flush=True)
"""


def test_a_failed_replica_is_announced_at_once_and_stops_the_others(cluster_dir):
    (cluster_dir / "job.py").write_text(FAILING_REPLICA)
    assert dtf("up", cwd=cluster_dir).returncode == 0
    # Worker 0 would run far longer than the test's bound: only stopping it ends the run.
    r = dtf("run", "job.py", cwd=cluster_dir, env={"WORKER0_SECONDS": "600"})
    assert r.returncode == 1
    assert "[worker:1] FAILED (exit code 1): ValueError: boom at step 3; its last lines:" in r.stdout
    assert "[worker:1]   worker 1 about to fail" in r.stdout
    assert "worker 0 finished" not in r.stdout
    assert "replica worker:1 failed (exit code 1); stopped worker:0 (--keep-going" in r.stderr

    r = dtf("run", "job.py", "--keep-going", cwd=cluster_dir, env={"WORKER0_SECONDS": "8"})
    assert r.returncode == 1
    announced = r.stdout.index("[worker:1] FAILED (exit code 1): ValueError: boom at step 3")
    assert announced < r.stdout.index("[worker:0] worker 0 finished")  # not held until the end
    assert "replica worker:1 failed (exit code 1)" in r.stderr and "stopped" not in r.stderr


def test_rerunning_the_example_says_why_nothing_trains(cluster_dir, tmp_path_factory):
    example = str(REPO / "examples" / "between_graph_async.py")
    checkpoints = tmp_path_factory.mktemp("checkpoints")
    args = ("run", example, "--", "--last_step", "40", "--checkpoint_dir", str(checkpoints))
    first = dtf(*args, cwd=cluster_dir, timeout=120)
    # Both workers may run the last step at once: 40 or 41.
    final = re.search(r"\[worker:0\] final global step (4[01])\n", first.stdout)
    assert first.returncode == 0 and final, first.stdout + first.stderr
    again = dtf(*args, cwd=cluster_dir, timeout=120)
    assert again.returncode == 0, again.stderr
    for index in (0, 1):
        assert (f"[worker:{index}] worker {index}: checkpoint in {checkpoints} is already at step "
                f"{final.group(1)} >= last step 40; nothing to train: pass --checkpoint_dir or delete it"
                ) in again.stdout
    # A fresh directory on the same cluster: whichever worker had nothing left says why.
    fresh = dtf("run", example, "--", "--last_step", "40", "--checkpoint_dir",
                str(tmp_path_factory.mktemp("fresh")), cwd=cluster_dir, timeout=120)
    assert fresh.returncode == 0, fresh.stderr
    for output in (first.stdout, again.stdout, fresh.stdout):
        assert "global step None" not in output and "after 0 local steps" not in output


FAILING_STEP = """\
import dtf as tf

x = tf.placeholder(tf.float32, name="x")
with tf.device("/job:worker/task:0"):
    y = tf.matmul(x, x, name="square")
with tf.Session("grpc://{address}") as sess:
    print(sess.run(y, {{x: [[1.0, 2.0], [3.0, 4.0]]}}).tolist())
    try:
        sess.run(y, {{x: [[1.0, 2.0, 3.0]]}})
    except tf.errors.InvalidArgumentError as e:
        print("failed as expected:", type(e).__name__)
"""


def test_a_task_log_names_failed_steps_and_counts_steps(cluster_dir):
    assert dtf("up", cwd=cluster_dir).returncode == 0
    worker0 = "127.0.0.1:" + _addresses(cluster_dir)[1]
    (cluster_dir / "failing.py").write_text(FAILING_STEP.format(address=worker0))
    r = _python(cluster_dir / "failing.py", cluster_dir)
    assert r.returncode == 0 and "failed as expected: InvalidArgumentError" in r.stdout, r.stderr
    assert dtf("down", cwd=cluster_dir).returncode == 0  # a stopping task sums up its steps
    log = dtf("logs", "worker:0", cwd=cluster_dir).stdout
    failed = [line for line in log.splitlines() if " WARNING " in line]
    assert len(failed) == 1, log
    assert "/job:worker/replica:0/task:0: a step of session" in failed[0]
    assert "failed at op 'square': InvalidArgumentError: " in failed[0]
    assert " INFO /job:worker/replica:0/task:0: 2 steps served (1 failed), " in log
    ps_log = dtf("logs", "ps:0", cwd=cluster_dir).stdout  # a ps serves partitions only
    assert " INFO /job:ps/replica:0/task:0: 0 steps served (0 failed), " not in ps_log


def test_plain_servers_started_by_hand_where_a_cluster_was_up_still_answer(cluster_dir):
    assert dtf("up", cwd=cluster_dir).returncode == 0 and dtf("down", cwd=cluster_dir).returncode == 0
    assert (cluster_dir / ".dtf" / "cluster.key").exists()  # the keys of the cluster that was up
    ps, worker0, worker1 = _addresses(cluster_dir)
    spec = f"ps|127.0.0.1:{ps},worker|127.0.0.1:{worker0};127.0.0.1:{worker1}"
    environ = {k: v for k, v in os.environ.items() if k != "DTF_CLUSTER_KEYS"}
    servers = [subprocess.Popen([sys.executable, "-m", "dtf", "server", f"--cluster_spec={spec}",
                                 f"--job_name={job}", f"--task_index={index}"], cwd=cluster_dir,
                                env=environ, stdout=subprocess.PIPE, text=True)
               for job, index in (("ps", 0), ("worker", 0), ("worker", 1))]
    try:
        for server in servers:
            assert "listening on" in server.stdout.readline()
        script = cluster_dir / "by_hand.py"
        script.write_text(BY_HAND.format(address=f"localhost:{worker0}"))
        r = _python(script, cluster_dir)  # plain servers: the file's keys are not theirs
        assert r.returncode == 0 and "answer 238" in r.stdout, r.stderr
        named = {"DTF_CLUSTER_KEYS": str(cluster_dir / ".dtf" / "cluster.key")}
        r = _python(script, cluster_dir, env=named)  # keys named outright: refused, said why
        assert r.returncode == 1 and "UnauthenticatedError" in r.stderr
        assert f"The task at localhost:{worker0} serves unencrypted (plain mode)" in r.stderr
    finally:
        for server in servers:
            server.kill()
            server.wait(10)
