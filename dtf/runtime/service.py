"""One task's services: a Worker and a Master behind one ZeroMQ ROUTER socket, plus
``Peers``, the way both reach other tasks (directly when the task lives in this process,
over the transport otherwise: a route per task, dtf.runtime.routes).
"""
from __future__ import annotations

import logging
import threading
import time

from dtf.framework import errors
from dtf.runtime.executor import ignore_float_errors_on_this_thread
from dtf.runtime.liveness import SilentPeer
from dtf.runtime.master import Master
from dtf.runtime.routes import choose as choose_route
from dtf.runtime.step_log import StepLog
from dtf.runtime.worker import Worker
from dtf.wire import inprocess
from dtf.wire import security as security_mod
from dtf.wire import transport

log = logging.getLogger("dtf")

LOG_WAIT_EVERY_S = 10.0

_FROM_ENV = object()  # TaskService's default: keys from DTF_CLUSTER_KEYS, else plain

_REGISTRY = inprocess.REGISTRY  # the services living in this process


def task_name(job, index) -> str:
    return f"/job:{job}/replica:0/task:{index}"


class Peers:
    """Reaches tasks by name: ``/job:ps/replica:0/task:0``."""

    def __init__(self, cluster: dict, local_task: str, local_service=None, client=None):
        self._addresses = {task_name(j, i): a for j, ts in cluster.items() for i, a in ts.items()}
        self._local_task = local_task
        self._local = local_service
        self._client = self.client = client or transport.Client()  # its sockets are per thread
        self._pool = transport.HandlerPool(8, "dtf-peer")
        self._gpus: dict = {}
        self._thread_state = threading.local()
        # task -> its route, chosen under the registry's generation ``_routes_generation``.
        self._routes: dict = {}
        self._routes_generation = -1

    def address(self, task):
        try:
            return self._addresses[task]
        except KeyError:
            raise errors.InvalidArgumentError(None, None, f"Task {task} is not in the cluster") from None

    def _route(self, task):
        """The backend that reaches ``task``, chosen again only once a task of this process
        has started or stopped since."""
        generation = _REGISTRY.generation  # read first: a change after it is seen next time
        if generation != self._routes_generation:
            self._routes = {}
            self._routes_generation = generation
        route = self._routes.get(task)
        if route is None:
            route = self._routes[task] = choose_route(self, task)
        return route

    def _service(self, task):
        if task == self._local_task and self._local is not None:
            return self._local  # this task's own route is always in-process: asked every step
        return self._route(task).service

    def in_process(self, task):
        """The service of ``task`` when it lives in this process (this task's included)."""
        return self._service(task)

    def local_worker(self):
        return self._local.worker

    def submit(self, fn, *args):
        """``fn(*args)`` on the peers' pool: its Outcome (``result()`` waits for it)."""
        return self._pool.call(fn, *args)

    def call(self, task, msg, timeout_s=None):
        return self._route(task).call(msg, timeout_s)

    def notify(self, task, msg):
        """Best effort, not waited for: ``msg`` to ``task``, whose answer or failure does
        not matter (e.g. dropping a graph that a restarted task no longer holds)."""
        self._route(task).notify(msg)

    def silent_tasks(self, tasks) -> list:
        """[(task, address, port accepts)] of the remote ``tasks`` that do not answer a
        ping within PING_TIMEOUT_S (asked together; a port that accepts means hung)."""
        from dtf.runtime.liveness import port_accepts

        def silent(task):
            address = self.address(task)
            try:
                self._client.ping(address, transport.PING_TIMEOUT_S)
                return None
            except transport.Unreachable:
                return task, address, port_accepts(address)

        remote = [t for t in tasks if self._service(t) is None]
        return [r for r in self._pool.map(silent, remote) if r is not None]

    def _send(self, task, address, msg):
        try:
            return self._client.send(address, msg)
        except Exception as e:  # noqa: BLE001 - zmq errors on a closed context etc.
            raise errors.UnavailableError(None, None, f"Cannot reach {task} at {address}: {e}") from None

    def _receive(self, task, address, rid, timeout_s, incarnation=None, on_interim=None):
        state = {"last_ping": 0.0, "last_log": 0.0}
        silence = SilentPeer()

        def on_wait(elapsed):
            if elapsed - state["last_log"] >= LOG_WAIT_EVERY_S:
                state["last_log"] = elapsed
                log.info("waiting for %s at %s (%.0f s)", task, address, elapsed)
            if elapsed - state["last_ping"] >= transport.PING_EVERY_S:
                state["last_ping"] = elapsed
                self._check_alive(task, address, incarnation, silence)

        try:
            reply = self._client.receive(address, rid, timeout_s, on_wait=on_wait, on_interim=on_interim)
        except transport.Unreachable:
            raise errors.DeadlineExceededError(
                None, None, f"Timed out after {timeout_s:.1f} s waiting for {task} at {address}") from None
        return transport.raise_for_error(reply)

    def _check_alive(self, task, address, incarnation, silence):
        """A ping of ``task``; silence raises only when the task is dead, not hung (see
        dtf.runtime.liveness); another incarnation always raises."""
        try:
            self._client.check_alive(address, incarnation, f"Task {task}")
        except errors.UnavailableError as e:
            silence.judge(address, e)
        else:
            silence.answered()

    def push(self, task, msg):
        """A one-way message to ``task`` (e.g. AbortStep), best effort: raises when it
        cannot be sent."""
        self._route(task).push(msg)

    def push_tensors(self, task, step_id, items):
        """Delivers [(key, tensor)] of one step to ``task``'s rendezvous in one message."""
        self._route(task).push_tensors(step_id, items)

    def gpu_counts(self):
        """(job, index) -> GPU count, for placement: each task is asked on first use."""
        return _GpuCounts(self)

    def gpu_count(self, task) -> int:
        """A task's GPU count from its Status reply, kept until ``forget_gpu_counts`` (the
        master calls it when a task has restarted: the new incarnation may differ)."""
        n = self._gpus.get(task)
        if n is None:
            n = self._gpus[task] = self._route(task).gpu_count()
        return n

    def forget_gpu_counts(self):
        self._gpus.clear()

    def wakeup(self) -> transport.Wakeup:
        """This thread's wake-up that interrupts its blocking_step._ReplyPump (the loop's own
        kind: its descriptors close once nothing refers to it, never while a waker might use
        them)."""
        wakeup = getattr(self._thread_state, "wakeup", None)
        if wakeup is None:
            wakeup = self._thread_state.wakeup = transport.Wakeup()
        return wakeup

    def close(self):
        self._pool.shutdown()
        self._client.close()


class _GpuCounts:
    """A lazy {(job, index): GPU count}: placement only asks about tasks that GPU-pinned
    ops name, so CPU-only graphs never probe a task's devices."""

    def __init__(self, peers):
        self._peers = peers

    def get(self, key, default=0):
        job, index = key
        try:
            return self._peers.gpu_count(task_name(job, index))
        except errors.InvalidArgumentError:
            return default


class TaskService:
    """The master and worker of one task, served on the task's address."""

    def __init__(self, cluster: dict, job: str, index: int, security=_FROM_ENV, max_message_bytes=None,
                 listen=True, state=None, inter_op_threads=1):
        """``listen=False``: an in-process-only task (no socket), reached via ``dispatch``;
        ``state`` shares variables with an in-process session; ``inter_op_threads`` as in
        ConfigProto (resolved: 1 runs each partition on one thread)."""
        # Summary ops (and any family `import dtf` leaves out) that remote clients send load
        # through the op-definition and kernel indexes when a graph names them.
        self.cluster = cluster
        self.job = job
        self.index = index
        self.task = task_name(job, index)
        self.address = cluster[job][index]
        if security is _FROM_ENV:
            security = security_mod.from_env()
        self.security = security
        self.peers = Peers(cluster, self.task, self, transport.Client(security))
        self.worker = Worker(self.task, self.peers.push_tensors, state, inter_op_threads)
        self.master = Master(self.task, cluster, self.peers)
        self.step_log = StepLog(self.task)
        self._handlers = {
            "RegisterGraph": self.worker.register_graph,
            "RunGraph": self.worker.run_graph,
            "DeregisterGraph": self.worker.deregister_graph,
            "Reset": self.worker.reset,
            "Status": self.status,
            "CreateSession": self.master.create_session,
            "ExtendSession": self.master.extend_session,
            "RunStep": self.step_log.wrap_run(self.master.run_step),
            "CloseSession": self.master.close_session,
            "ResetCluster": self.master.reset,
            "ListDevices": self.master.list_devices,
            "CheckCluster": self.master.check_cluster,
        }
        self._inline = {
            "Ping": lambda msg: {"ok": True, "incarnation": self.worker.incarnation, "task": self.task},
            "Tensor": self.worker.tensor_push,
            "AbortStep": self.worker.abort_step,
        }
        # A quick partition runs on the I/O thread (no thread hand-off per step).
        deferred = {"RunGraph": self.worker.start_graph,
                    "RunStep": self.step_log.wrap_start(self.master.start_step)}
        # A refused tensor push must fail its step here, not leave it waiting for the tensor.
        on_refused = {"Tensor": self.worker.tensor_refused}
        self._loop = transport.ServerLoop(self.address, self._handlers, self._inline, self.task,
                                          security, max_message_bytes=max_message_bytes,
                                          deferred=deferred, on_refused=on_refused,
                                          thread_init=ignore_float_errors_on_this_thread,
                                          ) if listen else None
        self._running = False

    def start(self):
        if self._running or self._loop is None:
            return
        self._running = True
        _REGISTRY.register(self.address, self)
        self._loop.start()
        self.master.start_reaper()

    def dispatch(self, msg):
        """Handles a message from this process (no encoding); raises OpErrors."""
        mtype = msg.get("type")
        fn = self._handlers.get(mtype) or self._inline.get(mtype)
        if fn is None:
            raise errors.UnimplementedError(None, None, f"unknown message type {mtype!r}")
        reply = fn(msg)
        return {} if reply is None else reply

    def status(self, msg=None):
        s = self.worker.status()
        s.update({"job": self.job, "index": self.index, "address": self.address,
                  "sessions": self.master.sessions_created,
                  "messages": self._loop.messages_served if self._loop else 0, "time": time.time()})
        return s

    def stop(self):
        _REGISTRY.unregister(self.address, self)
        self.master.stop_reaper()
        if self._loop is not None:
            self._loop.stop()
        self.peers.close()
        self._running = False
