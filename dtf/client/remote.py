"""The backend of ``tf.Session("grpc://host:port")``: a session on that task's master.

When the task lives in this process (the seeds create a server and a session side by
side) calls go straight to its master; otherwise they travel over ZeroMQ. The graph is
sent once and then extended with the ops added since.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
import time

from dtf.framework import errors
from dtf.framework.graph_def import node_def_of
from dtf.runtime import master as _master
from dtf.runtime.liveness import SilentPeer
from dtf.wire import inprocess, spin, transport
from . import cluster_keys
from .config import DeviceStepStats, NodeExecStats, RunOptions, describe_outputs

log = logging.getLogger("dtf")

_SCHEMES = ("grpc://", "dtf://", "grpc+dtf://", "tcp://")
_in_process_service = inprocess.REGISTRY.lookup  # asked on every call to a master


def parse_target(target: str) -> str:
    """'grpc://host:port' (or dtf://, or a bare host:port) -> 'host:port'."""
    t = target.decode() if isinstance(target, bytes) else str(target)
    for s in _SCHEMES:
        if t.startswith(s):
            t = t[len(s):]
            break
    else:
        if "://" in t:
            raise errors.InvalidArgumentError(None, None, f"Unsupported session target {target!r}; "
                                              "use grpc://host:port")
    host, _, port = t.rpartition(":")
    if not host or not port.isdigit():
        raise errors.InvalidArgumentError(None, None, f"Bad session target {target!r}: expected "
                                          "grpc://host:port")
    return t


def _connect_timeout_s(config) -> float:
    if config is not None and config.operation_timeout_in_ms:
        bound = config.operation_timeout_in_ms / 1000.0
    else:
        bound = float(os.environ.get("DTF_CONNECT_TIMEOUT_S", "60"))
    deadline = getattr(_connect_limit, "deadline", None)
    if deadline is not None:
        bound = min(bound, max(0.1, deadline - time.monotonic()))
    return bound


_connect_limit = threading.local()


@contextlib.contextmanager
def connect_deadline(deadline):
    """Bounds waiting for masters in this thread (time.monotonic() deadline): session
    recovery uses it so that one attempt cannot outlast the whole recovery bound."""
    saved = getattr(_connect_limit, "deadline", None)
    _connect_limit.deadline = deadline if saved is None else min(saved, deadline)
    try:
        yield
    finally:
        _connect_limit.deadline = saved


class _MasterChannel:
    """Calls one master, in-process or remote."""

    def __init__(self, address, config):
        self.address = address
        self._config = config
        self._client = None
        self._connected = False
        self._incarnation = None
        self._keys = None  # cluster_keys.KeyChoice, chosen with the first remote call

    @property
    def service(self):
        return _in_process_service(self.address)

    def call(self, msg, timeout_s=None):
        svc = self.service
        if svc is not None:
            return svc.dispatch(msg)
        if self._client is None:
            self._keys = cluster_keys.for_target(self.address)
            self._client = transport.Client(self._keys.keys)
        if not self._connected:
            self._wait_for_master(timeout_s)
        try:
            reply = self._client.call(self.address, msg, timeout_s, on_wait=self._liveness())
        except transport.Unreachable:
            raise errors.DeadlineExceededError(
                None, None, f"Timed out waiting for the master at {self.address}") from None
        return transport.raise_for_error(reply)

    def _wait_for_master(self, limit_s=None):
        """Pings until the master answers; ``limit_s`` (a call's own timeout, e.g. closing
        a session) shortens the connect bound."""
        bound = _connect_timeout_s(self._config)
        if limit_s is not None:
            bound = min(bound, limit_s)
        start = time.monotonic()
        last_log = start
        # The first ping is short: a task that cannot answer us (other keys) is told at once.
        wait_s = 0.5
        while True:
            try:
                reply = self._client.ping(self.address, min(wait_s, max(bound, 0.1)))
                self._incarnation = reply.get("incarnation")
                self._connected = True
                return
            except transport.Unreachable:
                wait_s = 2.0
                refused = cluster_keys.refusal(self.address, self._keys)
                if refused:  # waiting longer cannot help: say what would
                    raise errors.UnauthenticatedError(None, None, refused) from None
                now = time.monotonic()
                if now - start >= bound:
                    raise errors.UnavailableError(
                        None, None, f"The master at {self.address} did not answer within "
                        f"{bound:.0f} s: is its server running?") from None
                if now - last_log >= 5:
                    last_log = now
                    log.warning("waiting for the master at %s", self.address)

    def _liveness(self):
        state = {"last": 0.0}
        silence = SilentPeer()  # a hung master is waited for, a dead one is not

        def on_wait(elapsed):
            if elapsed - state["last"] < transport.PING_EVERY_S:
                return
            state["last"] = elapsed
            try:
                try:
                    self._client.check_alive(self.address, self._incarnation, "The master")
                except errors.UnavailableError as e:
                    silence.judge(self.address, e)
                else:
                    silence.answered()
            except errors.OpError:
                self._connected = False
                raise

        return on_wait

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None


def _config_dict(config):
    if config is None:
        return {}
    return {"allow_soft_placement": bool(config.allow_soft_placement),
            "log_device_placement": bool(config.log_device_placement),
            "device_filters": list(config.device_filters or []),
            "operation_timeout_in_ms": int(config.operation_timeout_in_ms or 0)}


class RemoteBackend:
    def __init__(self, target, graph, config):
        self._address = parse_target(target)
        self._graph = graph
        self._config = config
        self._channel = _MasterChannel(self._address, config)
        self._session = None
        self._sent = 0

    def _nodes_since(self, start):
        ops = self._graph._nodes_in_order[start:]
        in_process = self._channel.service is not None
        return [node_def_of(op) if in_process else node_def_of(op).to_dict() for op in ops], len(ops)

    def _ensure_session(self):
        n_ops = len(self._graph._nodes_in_order)
        if self._session is None:
            nodes, count = self._nodes_since(0)
            reply = self._channel.call({"type": "CreateSession", "nodes": nodes,
                                        "config": _config_dict(self._config)})
            self._session = reply["session"]
            self._sent = count
        elif n_ops > self._sent:
            start = self._sent
            nodes, count = self._nodes_since(start)
            self._session_call({"type": "ExtendSession", "session": self._session, "nodes": nodes})
            self._sent = start + count  # also when the call opened a new session

    def _session_call(self, msg, timeout_s=None):
        """Calls the master about this session; one the master closed for being idle is
        opened afresh (it holds only the graph) and the call repeated once."""
        try:
            return self._channel.call(msg, timeout_s)
        except errors.AbortedError as e:
            if not _master.session_expired(e, self._session):
                raise
        log.info("session %s expired on the master; opening a new one", self._session)
        self._session = None
        self._ensure_session()
        if msg["type"] == "ExtendSession":  # the new session already has the whole graph
            return {}
        return self._channel.call(dict(msg, session=self._session), timeout_s)

    def run(self, fetches, feeds, targets, feed_values, options, run_metadata):
        self._ensure_session()
        timeout_ms = int(getattr(options, "timeout_in_ms", 0) or 0) or int(
            self._config.operation_timeout_in_ms or 0)
        trace = (options is not None and run_metadata is not None
                 and getattr(options, "trace_level", 0) >= RunOptions.SOFTWARE_TRACE)
        msg = {"type": "RunStep", "session": self._session, "fetches": list(fetches),
               "feeds": dict(zip(feeds, feed_values)), "targets": list(targets),
               "timeout_ms": timeout_ms, "trace": trace}
        spin.step_started()
        try:
            reply = self._session_call(msg, None if not timeout_ms else timeout_ms / 1000.0 + 5.0)
        finally:
            spin.step_ended()
        if trace:
            for dev in reply.get("stats", []):
                run_metadata.step_stats.dev_stats.append(DeviceStepStats(device=dev["device"], node_stats=[
                    _node_stats(s) for s in dev["nodes"]]))
        return reply["outputs"]

    def list_devices(self):
        from .local import _DeviceAttributes

        reply = self._channel.call({"type": "ListDevices"})
        return [_DeviceAttributes(d, d.rsplit(":", 2)[-2], 0) for d in reply["devices"]]

    def close(self):
        if self._session is not None:
            try:
                self._channel.call({"type": "CloseSession", "session": self._session}, timeout_s=2.0)
            except (errors.OpError, Exception):  # noqa: BLE001 - closing must not raise
                pass
            self._session = None
        self._channel.close()


def _node_stats(s) -> NodeExecStats:
    """One node of a traced step as the master reported it (its label and output dtypes
    come from the partition the master registered)."""
    output, memory = describe_outputs(s["shapes"], s.get("dtypes"))
    return NodeExecStats(node_name=s["node"], all_start_micros=s["start_us"], op_end_rel_micros=s["dur_us"],
                         all_end_rel_micros=s["dur_us"],
                         timeline_label=s.get("label") or f"{s['node']} = {s['op']}()",
                         output_shapes=s["shapes"], output=output, memory=memory)


def reset(target, containers=None, config=None):
    channel = _MasterChannel(parse_target(target), config)
    try:
        channel.call({"type": "ResetCluster", "containers": None if containers is None else list(containers)})
    finally:
        channel.close()


def tasks_not_answering(target, config=None, jobs=None) -> list:
    """The tasks of ``target``'s cluster (of ``jobs``, when given) that do not answer
    their master's ping, as {task, address, port_accepts} (a dtf extension; a port that
    still accepts connections means a hung process, one that refuses a dead one)."""
    channel = _MasterChannel(parse_target(target), config)
    try:
        return list(channel.call({"type": "CheckCluster", "jobs": list(jobs) if jobs else None},
                                 timeout_s=transport.PING_TIMEOUT_S * 3)["not_answering"])
    finally:
        channel.close()
