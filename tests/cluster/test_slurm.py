"""dtf under a real Slurm (tests/cluster/slurm.py: a private one-node slurmctld + slurmd).

- ``srun`` starts a 1 ps + 2 worker job whose ranks find their cluster with
  SlurmClusterResolver and train (examples/managed_between_graph.py);
- ``dtf up --slurm`` inside ``salloc`` starts each task of a cluster.toml given as task
  counts as its own job step, and ``dtf status``, ``dtf run`` and ``dtf down`` work on it.

Skipped, with the reason, where Slurm is not installed or cannot be started.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sys

import pytest

from tests.cluster.conftest import REPO
from tests.cluster.slurm import Slurm

pytestmark = pytest.mark.cluster


def _free_run(count: int) -> int:
    """A port p with p .. p+count-1 all free on 127.0.0.1 (the tasks of one node)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    cluster = Slurm(tmp_path_factory.mktemp("slurm")).start()
    yield cluster
    cluster.close()


def _losses(text: str) -> list:
    return [float(v) for v in re.findall(r"loss ([0-9.e+-]+)", text)]


def test_srun_ranks_find_their_cluster_with_the_resolver_and_train(slurm, tmp_path):
    port = _free_run(3)
    result = slurm.run(
        ["srun", "--ntasks=3", "--overcommit", "--label", "--kill-on-bad-exit=1", sys.executable,
         os.path.join(REPO, "examples", "managed_between_graph.py"), "--ps=1", "--workers=2",
         f"--port_base={port}", f"--checkpoint_dir={tmp_path / 'ckpt'}", "--last_step=120",
         "--save_checkpoint_steps=40", "--step_delay=0.02", "--max_wait_secs=60"],
        timeout=120, cwd=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:] + "\n" + slurm.log_tail()
    node = slurm.node
    cluster = f"{{'ps': ['{node}:{port}'], 'worker': ['{node}:{port + 1}', '{node}:{port + 2}']}}"
    # Rank 0 is ps:0, ranks 1 and 2 the workers (jobs sorted by name take the ranks in turn).
    assert f"0: ps 0 of {cluster}" in out, out[-3000:]
    assert f"1: worker 0 of {cluster}" in out, out[-3000:]
    assert f"2: worker 1 of {cluster}" in out, out[-3000:]
    final = re.search(r"1: final global step (\d+)", out)  # the chief; async: may pass 120
    assert final and int(final.group(1)) >= 120, out[-3000:]
    for rank, index in (("1", 0), ("2", 1)):
        assert re.search(rf"{rank}: worker {index} done after [1-9]\d* local steps", out), out[-3000:]
    assert max(_losses(out)) < 1.0, out[-3000:]  # it starts near 13 (w = b = 0)
    assert "0: ps 0: every worker is done" in out, out[-3000:]


def test_dtf_up_slurm_in_an_allocation_status_run_down(slurm, tmp_path):
    port = _free_run(3)
    (tmp_path / "cluster.toml").write_text(
        "[jobs]\nps = 1\nworker = 2\n\n[slurm]\n" f"port_base = {port}\n")
    dtf = [sys.executable, "-m", "dtf"]
    script = " && ".join([
        f"{' '.join(dtf)} up --slurm",
        f"{' '.join(dtf)} status --json > status.json",
        "squeue --steps --noheader --format='%j %N' > steps.txt",
        f"{' '.join(dtf)} run {os.path.join(REPO, 'examples', 'between_graph_async.py')} "
        f"--checkpoint_dir={tmp_path / 'ckpt'} --last_step=40 --save_checkpoint_steps=20 > run.txt 2>&1",
    ]) + f"; rc=$?; {' '.join(dtf)} down > down.txt 2>&1; exit $rc"
    result = slurm.run(["salloc", "--ntasks=3", "--overcommit", "bash", "-c", script],
                       timeout=180, cwd=tmp_path)
    logs = "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-1500:]}"
                   for p in sorted(tmp_path.glob("*.txt")) + sorted(tmp_path.glob(".dtf/logs/*")))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:] + logs
    node = slurm.node
    # The addresses come from the allocation's node list, in SlurmClusterResolver's layout.
    tasks = {f"{t['job']}:{t['index']}": t for t in json.loads((tmp_path / "status.json").read_text())}
    assert {name: t["address"] for name, t in tasks.items()} == {
        "ps:0": f"{node}:{port}", "worker:0": f"{node}:{port + 1}", "worker:1": f"{node}:{port + 2}"}
    assert all(t["state"] == "up" for t in tasks.values()), tasks
    # Each task is its own job step, named after it, on the allocation's node.
    steps = (tmp_path / "steps.txt").read_text().split("\n")
    assert sorted(s.strip() for s in steps if s.strip().startswith("dtf-")) == [
        f"dtf-ps-0 {node}", f"dtf-worker-0 {node}", f"dtf-worker-1 {node}"], steps
    run = (tmp_path / "run.txt").read_text()
    final = re.search(r"final global step (\d+)", run)
    assert final and int(final.group(1)) >= 40, run[-2000:]
    down = (tmp_path / "down.txt").read_text()
    assert "is down" in down and down.count("stopped ") == 3, down
    # dtf down ended the job steps: the allocation holds none of ours any more.
    left = slurm.run(["squeue", "--steps", "--noheader", "--format=%j"], timeout=15).stdout
    assert "dtf-" not in left, left
