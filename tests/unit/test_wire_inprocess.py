"""The in-process backend (dtf.wire.inprocess) and the routes Peers choose once per task
(dtf.runtime.routes): tasks of this process are called directly, others over the wire,
and the choice follows tasks of this process starting and stopping."""
import time

import numpy as np
import pytest

from dtf.framework import errors
from dtf.runtime import routes
from dtf.runtime.service import TaskService
from dtf.train.server import free_port
from dtf.wire import inprocess

CLUSTER = {"ps": {0: "localhost:1"}, "worker": {0: "127.0.0.1:2"}}
PS, WORKER = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"


@pytest.fixture
def tasks():
    ps, worker = (TaskService(CLUSTER, job, 0, security=None, listen=False) for job in ("ps", "worker"))
    yield ps, worker
    for svc in (ps, worker):
        inprocess.REGISTRY.unregister(svc.address, svc)
        svc.stop()


def test_the_registry_finds_a_service_under_any_spelling_of_its_loopback_address():
    registry, svc = inprocess.Registry(), object()
    assert registry.lookup("127.0.0.1:7") is None
    before = registry.generation
    registry.register("localhost:7", svc)
    assert registry.generation > before
    for spelling in ("127.0.0.1:7", "localhost:7", "0.0.0.0:7", ":7"):
        assert registry.lookup(spelling) is svc
    assert registry.lookup("127.0.0.1:8") is None


def test_unregistering_drops_only_the_service_still_registered_there():
    registry, old, new = inprocess.Registry(), object(), object()
    registry.register("127.0.0.1:7", old)
    registry.register("127.0.0.1:7", new)  # a restarted task took the address
    generation = registry.generation
    registry.unregister("127.0.0.1:7", old)  # the old one stopping late changes nothing
    assert registry.lookup("127.0.0.1:7") is new and registry.generation == generation
    registry.unregister("localhost:7", new)
    assert registry.lookup("127.0.0.1:7") is None and registry.generation > generation


def test_a_task_of_this_process_is_called_directly(tasks):
    ps, worker = tasks
    inprocess.REGISTRY.register(ps.address, ps)
    peers = worker.peers
    assert peers.in_process(PS) is ps and peers.in_process(WORKER) is worker
    assert peers.call(PS, {"type": "Status"})["task"] == PS
    assert peers.gpu_count(PS) == ps.worker.gpu_count
    # A step's tensors go straight into its rendezvous, the arrays themselves.
    value = np.arange(3.0)
    peers.push_tensors(PS, 42, [("edge;0", value)])
    assert ps.worker.rendezvous.step(42).recv("edge;0") is value


def test_the_route_is_chosen_once_and_again_when_a_task_of_this_process_starts_or_stops(tasks):
    ps, worker = tasks
    peers = worker.peers
    remote = peers._route(PS)
    assert isinstance(remote, routes.WireRoute) and remote.service is None
    assert peers._route(PS) is remote  # kept: no lookup per call
    inprocess.REGISTRY.register(ps.address, ps)
    direct = peers._route(PS)
    assert isinstance(direct, routes.InProcessRoute) and direct.service is ps
    assert peers._route(PS) is direct
    inprocess.REGISTRY.unregister(ps.address, ps)
    assert peers._route(PS).service is None  # stopped: a restarted process is reached by wire


def test_every_backend_offers_the_same_interface():
    for backend in routes.BACKENDS:
        for name in ("for_task", "service", "call", "notify", "push", "push_tensors", "gpu_count"):
            assert hasattr(backend, name), (backend, name)


def test_a_task_of_this_process_reached_over_the_wire_answers_the_same():
    """A listening task taken out of the registry is reached as a remote one would be."""
    port = free_port()
    cluster = {"ps": {0: f"127.0.0.1:{port}"}, "worker": {0: "127.0.0.1:2"}}
    ps = TaskService(cluster, "ps", 0, security=None)
    worker = TaskService(cluster, "worker", 0, security=None, listen=False)
    ps.start()
    try:
        assert worker.peers.in_process(PS) is ps  # started: registered
        inprocess.REGISTRY.unregister(ps.address, ps)
        assert isinstance(worker.peers._route(PS), routes.WireRoute)
        assert worker.peers.call(PS, {"type": "Status"}, timeout_s=10)["task"] == PS
        assert worker.peers.gpu_count(PS) == ps.worker.gpu_count
        worker.peers.push_tensors(PS, 7, [("edge;0", np.arange(4.0))])
        got = ps.worker.rendezvous.step(7).recv("edge;0", deadline=time.monotonic() + 10)
        np.testing.assert_array_equal(got, np.arange(4.0))
        with pytest.raises(errors.UnimplementedError, match="Bogus"):
            worker.peers.call(PS, {"type": "Bogus"}, timeout_s=10)
    finally:
        worker.stop()
        ps.stop()


def test_a_task_outside_the_cluster_is_refused_by_name(tasks):
    _, worker = tasks
    with pytest.raises(errors.InvalidArgumentError, match="/job:nope/replica:0/task:0"):
        worker.peers.call("/job:nope/replica:0/task:0", {"type": "Status"})


def test_an_in_process_call_raises_the_handlers_error_on_the_callers_thread(tasks):
    ps, worker = tasks
    inprocess.REGISTRY.register(ps.address, ps)
    with pytest.raises(errors.UnimplementedError, match="Bogus"):
        worker.peers.call(PS, {"type": "Bogus"})
    worker.peers.notify(PS, {"type": "DeregisterGraph", "handle": "never-registered"})  # best effort
