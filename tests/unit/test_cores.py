"""The kernels' thread budget (dtf.kernels.cpu.cores): a host's cores divided among the
compute tasks of the cluster on it, parameter servers not counted, the variable first,
and a server process sizing its kernels before they load."""
import sys

import pytest

from dtf.kernels.cpu import cores


@pytest.mark.parametrize("jobs,own,want", [
    ({"ps": {0: "localhost:1"}, "worker": {0: "localhost:2", 1: "127.0.0.1:3"}}, "localhost:1", 2),
    ({"ps": {0: "localhost:1"}, "worker": {0: "localhost:2"}}, "localhost:2", 1),
    ({"ps": {0: "a:1"}, "worker": {0: "b:2", 1: "a:3"}, "chief": {0: "a:4"}}, "a:3", 2),
    ({"ps": {0: "a:1"}, "worker": {0: "b:2"}}, "a:1", 1),  # a ps alone on its host
    ({"worker": {0: "[::1]:2", 1: "127.0.0.2:3", 2: "LOCALHOST:4"}}, "[::1]:2", 3),
])
def test_compute_tasks_on_host(jobs, own, want):
    assert cores.compute_tasks_on_host(jobs, own) == want


def test_budget_divides_the_cores_and_the_variable_wins(monkeypatch):
    monkeypatch.setattr(cores, "process_cores", lambda: 8)
    monkeypatch.setattr(cores, "_sharers", 3)
    monkeypatch.delenv("DTF_INTRA_OP_THREADS", raising=False)
    assert cores.threads() == 2
    monkeypatch.setattr(cores, "_sharers", 16)
    assert cores.threads() == 1
    monkeypatch.setenv("DTF_INTRA_OP_THREADS", "5")
    assert cores.threads() == 5


def test_a_server_divides_the_cores_before_the_kernels_load(monkeypatch):
    import dtf as tf

    monkeypatch.setattr(cores, "process_cores", lambda: 4)
    monkeypatch.setattr(cores, "_sharers", 1)
    monkeypatch.delenv("DTF_INTRA_OP_THREADS", raising=False)
    cluster = {"ps": ["localhost:0"], "worker": ["localhost:0", "127.0.0.1:0"]}
    # Kernels already loaded: their pool keeps its size.
    from dtf.kernels.cpu import intra_op  # noqa: F401

    tf.train.Server(cluster, job_name="worker", task_index=0, start=False)
    assert cores.threads() == 4
    # A fresh server process, before any kernel module has loaded.
    monkeypatch.delitem(sys.modules, "dtf.kernels.cpu.intra_op", raising=False)
    tf.train.Server(cluster, job_name="worker", task_index=0, start=False)
    assert cores.threads() == 2
