"""Master service: sessions over a graph; per (fetches, feeds, targets) it prunes, places,
partitions and registers the partitions once, then each step is one RunGraph per partition.

Tensors between partitions go worker to worker (push to the receiver's rendezvous); the
master only forwards the client's feeds to the partitions that consume them and returns
the fetches.
"""
from __future__ import annotations

import collections
import itertools
import logging
import random
import threading
import time
from dataclasses import dataclass

import numpy as np

from dtf.framework import dtypes, errors
from dtf.framework.graph_def import NodeDef
from dtf.framework.graph_walk import needed_nodes, split_tensor_name
from dtf.partition import partition, timeline_label
from dtf.placement import ClusterView, place, task_of
from dtf.runtime import env
from dtf.runtime.async_step import AsyncStep
from dtf.runtime.blocking_step import BlockingStep

log = logging.getLogger("dtf")

# A session no client has used for this long is closed by the master, as if its client had
# closed it: a client that died without closing must not keep its graphs on every worker.
IDLE_TIMEOUT_ENV = "DTF_SESSION_IDLE_TIMEOUT_S"
DEFAULT_IDLE_TIMEOUT_S = 3600.0
# The error for a session closed that way says so; its client opens a new one in its place
# (a session holds only its graph: variables and queues live on the tasks).
SESSION_EXPIRED = "was closed by the master after"
_EXPIRED_KEPT = 4096  # handles of expired sessions remembered, to tell them from unknown ones


def idle_timeout_s() -> float:
    return env.seconds(IDLE_TIMEOUT_ENV, DEFAULT_IDLE_TIMEOUT_S, positive=True)


def session_expired(error, handle) -> bool:
    """Whether ``error`` (from a master) says that session ``handle`` was closed for being
    idle, rather than lost with a restarted master."""
    return isinstance(error, errors.AbortedError) and SESSION_EXPIRED in error.message and \
        repr(handle) in error.message


@dataclass
class _Part:
    task: str
    device: str
    handle: str
    incarnation: int
    feeds: tuple
    fetches: tuple
    labels: dict  # node name -> (timeline label, output dtype names), for traced steps' stats


@dataclass
class _StepPlan:
    parts: list
    fed_fetches: tuple  # fetches that are themselves fed: answered by the master

    def __post_init__(self):
        # A task may run several partitions of the step (its CPU and GPU): it ends the
        # step's rendezvous only after the last of them.
        per_task = collections.Counter(p.task for p in self.parts)
        self.task_partitions = [per_task[p.task] for p in self.parts]


class MasterSession:
    def __init__(self, master, handle, nodes, config):
        self.master = master
        self.handle = handle
        self.nodes: dict = {}
        self.config = config or {}
        self._plans: dict = {}
        self._feed_np_dtypes: dict = {}  # fed tensor -> the numpy dtype that passed check_feeds
        self._lock = threading.Lock()
        self.last_used = time.monotonic()
        self.steps_in_flight = 0
        self.extend(nodes)

    def extend(self, nodes):
        added = [n if isinstance(n, NodeDef) else NodeDef.from_dict(n) for n in nodes]
        for nd in added:
            self.nodes[nd.name] = nd

    def _lookup(self, name):
        return self.nodes[name]

    def plan(self, fetches, feeds, targets) -> _StepPlan:
        key = (fetches, feeds, targets)
        sp = self._plans.get(key)
        if sp is None:
            with self._lock:
                sp = self._plans.get(key)
                if sp is None:
                    sp = self._plans[key] = self._build(fetches, feeds, targets)
        return sp

    def invalidate(self):
        """Forgets the plans (a task restarted): their graphs are deregistered where they
        still exist, and the next steps register afresh."""
        with self._lock:
            plans, self._plans = self._plans, {}
        self.master.deregister([p for sp in plans.values() for p in sp.parts])

    def close(self):
        self.invalidate()

    def task_restarted(self):
        """A step failed with Aborted (a task restarted): the next steps register afresh,
        and placement asks the tasks for their GPUs again (the new process may differ)."""
        self.invalidate()
        self.master.peers.forget_gpu_counts()

    def tensor_dtype(self, name, role="FetchOutputs"):
        """The dtype of tensor ``name`` ("op:index") of the session's graph; errors as TF's
        master words them for a name it cannot find (``role``: FetchOutputs, FeedInputs)."""
        op, index = split_tensor_name(name)
        node = self.nodes.get(op)
        if node is None:
            raise errors.NotFoundError(None, None, f"{role} node {name}: not found in the session's graph")
        if not 0 <= index < len(node.output_dtypes):
            raise errors.InvalidArgumentError(
                None, None, f"{role} {name}: output index too large, must be < {len(node.output_dtypes)}")
        return node.output_dtypes[index]

    def check_feeds(self, feeds: dict):
        """A fed value must have its tensor's dtype (a client that casts, as TF's Python
        client does, never fails this; one writing the wire itself can). A feed whose
        array has the numpy dtype that passed for its tensor before passes at a dict
        lookup: a training loop feeds the same placeholders every step, and the full check
        cost a between-graph worker ~1.3 us per feed and step (timeit)."""
        passed = self._feed_np_dtypes
        for name, value in feeds.items():
            # Not ``passed.get(name) != value.dtype``: numpy reads None as float64.
            want = passed.get(name)
            if want is None or type(value) is not np.ndarray or want != value.dtype:
                self._check_feeds_fully(feeds)
                return

    def _check_feeds_fully(self, feeds: dict):
        passed = {}
        for i, (name, value) in enumerate(sorted(feeds.items())):
            want = dtypes.as_dtype(self.tensor_dtype(name, "FeedInputs")).base_dtype
            try:
                got = dtypes.from_numpy(np.asarray(value).dtype)
            except TypeError:
                got = None
            if got != want:
                got_name = dtypes.tf_type_string(got) if got is not None else type(value).__name__
                raise errors.InvalidArgumentError(
                    None, None, f"Expects arg[{i}] to be {dtypes.tf_type_string(want)} but {got_name} "
                    f"is provided (the value fed for {name})")
            if type(value) is np.ndarray and len(self._feed_np_dtypes) < 4096:
                passed[name] = value.dtype
        self._feed_np_dtypes.update(passed)  # only once every feed of the step passed

    def _build(self, fetches, feeds, targets) -> _StepPlan:
        for f in fetches:
            self.tensor_dtype(f)
        for f in feeds:
            self.tensor_dtype(f, "FeedInputs")
        nodes = needed_nodes(self._lookup, fetches, feeds, targets)
        placement = place(nodes, self.master.cluster_view(),
                          bool(self.config.get("allow_soft_placement")),
                          tuple(self.config.get("device_filters") or ()))
        if self.config.get("log_device_placement"):
            for n in nodes:
                log.warning("%s: (%s): %s", n.name, n.op, placement[n.name])
        fed = set(feeds)
        keep = {split_tensor_name(f)[0] for f in fetches} | set(targets)
        parts_nodes = partition(nodes, placement, feeds, keep)
        parts = []
        for device, pnodes in sorted(parts_nodes.items()):
            names = {n.name for n in pnodes}
            p_feeds = sorted({t for n in pnodes for t in n.inputs if t in fed})
            p_fetches = tuple(f for f in fetches if f not in fed and split_tensor_name(f)[0] in names)
            task = task_of(device)
            reply = self.master.peers.call(task, {"type": "RegisterGraph", "device": device,
                                                  "nodes": [n.to_dict() for n in pnodes]})
            parts.append(_Part(task, device, reply["handle"], reply["incarnation"], tuple(p_feeds),
                               p_fetches, {n.name: (timeline_label(n), [d.name for d in n.output_dtypes])
                                          for n in pnodes}))
        # The session's own task runs last, on the calling thread (see run_step).
        parts.sort(key=lambda p: p.task == self.master.task_name)
        return _StepPlan(parts, tuple(f for f in fetches if f in fed))

    def run_step(self, fetches, feeds: dict, targets, timeout_ms=0, trace=False):
        sp = self.plan(tuple(fetches), tuple(sorted(feeds)), tuple(targets))
        self.check_feeds(feeds)
        msgs, step_id = self._run_graph_messages(sp, feeds, timeout_ms, trace)
        replies = BlockingStep(self, sp.parts, msgs, step_id, timeout_ms).run()
        outputs = {f: feeds[f] for f in sp.fed_fetches}
        stats = []
        for p, r in zip(sp.parts, replies):
            outputs.update(r["outputs"])
            if trace:
                nodes = r.get("stats", [])
                for n in nodes:
                    n["label"], n["dtypes"] = p.labels.get(n.get("node"), (None, None))
                stats.append({"device": p.device, "nodes": nodes})
        return [outputs[f] for f in fetches], stats

    def start_step(self, fetches, feeds: dict, targets, respond, loop) -> bool:
        """Runs a step whose plan is built without blocking the calling I/O thread (see
        async_step); False when it must take the threaded path (first run of a signature,
        or a step with parts in other tasks of this process)."""
        sp = self._plans.get((tuple(fetches), tuple(sorted(feeds)) if feeds else (), tuple(targets)))
        if sp is None:
            return False
        self.check_feeds(feeds)
        for p in sp.parts:
            if p.task != self.master.task_name and self.master.peers.in_process(p.task) is not None:
                return False
        msgs, _ = self._run_graph_messages(sp, feeds, 0, False)
        AsyncStep(self, sp, msgs, list(fetches), feeds, respond, loop).start()
        return True

    def _run_graph_messages(self, sp, feeds, timeout_ms, trace):
        step_id = random.getrandbits(62)
        msgs = [{"type": "RunGraph", "handle": p.handle, "step_id": step_id,
                 "incarnation": p.incarnation,
                 "feeds": {n: feeds[n] for n in p.feeds} if p.feeds else {},
                 "fetches": list(p.fetches), "timeout_ms": timeout_ms, "trace": trace,
                 "task_partitions": n_parts}
                for p, n_parts in zip(sp.parts, sp.task_partitions)]
        return msgs, step_id


class Master:
    def __init__(self, task_name, cluster, peers):
        """``cluster``: job -> {task index: address}; ``peers`` reaches any task."""
        self.task_name = task_name
        self.cluster = cluster
        self.peers = peers
        self._sessions: dict = {}
        self._handles = itertools.count(1)
        self._lock = threading.Lock()
        self.sessions_created = 0
        self._expired: collections.OrderedDict = collections.OrderedDict()  # handle -> idle s
        self._idle_timeout_s = idle_timeout_s()
        self._stop_reaper = threading.Event()
        self._reaper = None

    def cluster_view(self) -> ClusterView:
        job, task = _job_task(self.task_name)
        return ClusterView({j: set(t) for j, t in self.cluster.items()}, job, task,
                           self.peers.gpu_counts())

    def create_session(self, msg):
        handle = f"{self.task_name}#{next(self._handles)}-{random.getrandbits(32):08x}"
        with self._lock:
            self._sessions[handle] = MasterSession(self, handle, msg.get("nodes", []), msg.get("config"))
            self.sessions_created += 1
        return {"session": handle}

    def _session(self, msg) -> MasterSession:
        handle = msg.get("session")
        s = self._sessions.get(handle)
        if s is None:
            idle = self._expired.get(handle) if isinstance(handle, str) else None
            if idle is not None:
                raise errors.AbortedError(None, None, f"Session {handle!r} {SESSION_EXPIRED} {idle:.0f} s "
                                          f"without use ({IDLE_TIMEOUT_ENV}={self._idle_timeout_s:g})")
            raise errors.AbortedError(None, None, f"Session {handle!r} is not found on "
                                      f"{self.task_name}; the master may have restarted")
        s.last_used = time.monotonic()
        return s

    def start_step(self, msg, respond, loop) -> bool:
        """RunStep on the I/O thread (see MasterSession.start_step)."""
        s = self._sessions.get(msg.get("session"))
        if s is None or msg.get("timeout_ms") or msg.get("trace"):
            return False
        with self._lock:
            s.last_used = time.monotonic()
            s.steps_in_flight += 1

        def step_ended(result):
            with self._lock:
                s.steps_in_flight -= 1
                s.last_used = time.monotonic()
            respond(result)

        started = False
        try:
            started = s.start_step(msg.get("fetches", []), msg.get("feeds") or {},
                                   msg.get("targets", []), step_ended, loop)
        finally:
            if not started:
                with self._lock:
                    s.steps_in_flight -= 1
        return started

    def extend_session(self, msg):
        self._session(msg).extend(msg.get("nodes", []))
        return {}

    def run_step(self, msg):
        s = self._session(msg)
        t0 = time.perf_counter()
        with self._lock:
            s.steps_in_flight += 1
        try:
            values, stats = s.run_step(msg.get("fetches", []), msg.get("feeds") or {},
                                       msg.get("targets", []), msg.get("timeout_ms") or 0,
                                       bool(msg.get("trace")))
        finally:
            with self._lock:
                s.steps_in_flight -= 1
            s.last_used = time.monotonic()
        reply = {"outputs": values}
        if stats:
            reply["stats"] = stats
            reply["elapsed_us"] = int((time.perf_counter() - t0) * 1e6)
        return reply

    def close_session(self, msg):
        """Closes a session and deregisters its graphs from every task (as TF does)."""
        with self._lock:
            s = self._sessions.pop(msg.get("session"), None)
        if s is not None:
            s.close()
        return {}

    def deregister(self, parts):
        """Drops registered partitions from their tasks: this task's at once, others' by
        best-effort calls that nobody waits for (a dead task has dropped them anyway)."""
        for p in parts:
            self.peers.notify(p.task, {"type": "DeregisterGraph", "handle": p.handle})

    def start_reaper(self):
        """Closes sessions left idle for the idle timeout (see IDLE_TIMEOUT_ENV)."""
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap_loop, name="dtf-session-reaper",
                                            daemon=True)
            self._reaper.start()

    def stop_reaper(self):
        self._stop_reaper.set()

    def _reap_loop(self):
        every = min(30.0, max(0.05, self._idle_timeout_s / 4))
        while not self._stop_reaper.wait(every):
            try:
                self.reap_idle()
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("%s: closing idle sessions failed", self.task_name)

    def reap_idle(self, now=None):
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [(h, s) for h, s in self._sessions.items()
                    if s.steps_in_flight == 0 and now - s.last_used >= self._idle_timeout_s]
            for h, s in idle:
                del self._sessions[h]
                self._expired[h] = now - s.last_used
            while len(self._expired) > _EXPIRED_KEPT:
                self._expired.popitem(last=False)
        for h, s in idle:
            log.info("%s: closing session %s, unused for %.0f s", self.task_name, h, now - s.last_used)
            s.close()
        return len(idle)

    def reset(self, msg):
        """Clears containers on every task of the cluster that answers."""
        failed = []
        for job, tasks in sorted(self.cluster.items()):
            for idx in sorted(tasks):
                task = f"/job:{job}/replica:0/task:{idx}"
                try:
                    self.peers.call(task, {"type": "Reset", "containers": msg.get("containers")},
                                    timeout_s=5.0)
                except errors.OpError as e:
                    failed.append(f"{task}: {e.message}")
        with self._lock:
            for s in self._sessions.values():
                s.invalidate()
        return {"failed": failed}

    def check_cluster(self, msg=None):
        """The tasks of the cluster (of ``jobs``, when given) that do not answer a ping,
        with whether their port still accepts connections (hung) or not (dead): a sync
        chief whose updates stall names them."""
        jobs = (msg or {}).get("jobs")
        if jobs is not None and not (isinstance(jobs, list) and all(isinstance(j, str) for j in jobs)):
            raise errors.InvalidArgumentError(None, None, f"CheckCluster: jobs must be a list of job "
                                              f"names, got {type(jobs).__name__}")
        tasks = [f"/job:{job}/replica:0/task:{idx}" for job, ts in sorted(self.cluster.items())
                 if not jobs or job in jobs for idx in sorted(ts)]
        silent = self.peers.silent_tasks([t for t in tasks if t != self.task_name])
        return {"not_answering": [{"task": task, "address": address, "port_accepts": accepts}
                                  for task, address, accepts in silent]}

    def list_devices(self, msg=None):
        devices = []
        for job, tasks in sorted(self.cluster.items()):
            for idx in sorted(tasks):
                devices.append(f"/job:{job}/replica:0/task:{idx}/device:CPU:0")
                try:
                    n = self.peers.gpu_count(f"/job:{job}/replica:0/task:{idx}")
                except errors.OpError:
                    n = 0  # a task that does not answer lists its CPU only
                devices.extend(f"/job:{job}/replica:0/task:{idx}/device:GPU:{i}" for i in range(n))
        return {"devices": devices}


def _job_task(task_name):
    parts = dict(p.split(":", 1) for p in task_name.strip("/").split("/"))
    return parts["job"], int(parts["task"])
