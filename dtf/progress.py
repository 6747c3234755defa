"""Progress reports from a job script to the ``dtf run`` that started it.

``progress.report("step", global_step=120, last_step=1000)`` or
``progress.report("checkpoint", path="/tmp/model.ckpt-120", global_step=120)`` sends one small
JSON message to the collector named by ``$DTF_PROGRESS`` (set by ``dtf run``). Sending never
blocks and never raises: without a collector the message is dropped, and each kind is
limited to ``MAX_PER_S`` messages a second so a fast training loop pays almost nothing.
Without ``$DTF_PROGRESS`` (the script run on its own) it is a no-op. Each message carries
``$DTF_PROGRESS_TOKEN``, the secret of this run that ``dtf run`` hands only to its own
replicas: the collector drops messages without it (any local process can connect).

Fields ``dtf run`` understands: for "step", ``global_step``, ``last_step`` (the step
training stops at, when known) and ``local_step`` (this replica's own step count, for its
rate); for "checkpoint", ``path`` and ``global_step``. ``task`` defaults to this replica's
task from ``$TF_CONFIG`` ("worker:0").
"""
from __future__ import annotations

import atexit
import json
import os
import threading
import time


ENV = "DTF_PROGRESS"
TOKEN_ENV = "DTF_PROGRESS_TOKEN"
MAX_PER_S = 10.0
_LINGER_MS = 500  # at exit, how long queued reports may take to reach the collector

_lock = threading.Lock()
_last_sent: dict = {}
_channel: dict = {}  # endpoint -> (context, socket)


def report(kind: str, **fields) -> bool:
    """Sends one progress message; returns whether it was handed to the collector."""
    endpoint = os.environ.get(ENV)
    if not endpoint:
        return False
    now = time.monotonic()
    with _lock:
        if now - _last_sent.get(kind, float("-inf")) < 1.0 / MAX_PER_S:
            return False
        _last_sent[kind] = now
        sock = _socket(endpoint)
        if sock is None:
            return False
        message = {"kind": kind, "task": _task(), "time": time.time(), **fields,
                   "token": os.environ.get(TOKEN_ENV, "")}
        return _send(sock, json.dumps(message, default=str).encode())


def _task() -> str:
    try:
        task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
        return f"{task['type']}:{task['index']}"
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"pid:{os.getpid()}"


def _socket(endpoint):
    if endpoint in _channel:
        return _channel[endpoint][1]
    try:
        import zmq

        ctx = zmq.Context()
        sock = ctx.socket(zmq.PUSH)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # queue nothing unless a collector is connected
        sock.setsockopt(zmq.SNDHWM, 100)
        sock.setsockopt(zmq.LINGER, _LINGER_MS)
        sock.connect(endpoint)
    except Exception:  # noqa: BLE001 - a bad endpoint must not break training
        _channel[endpoint] = (None, None)
        return None
    _channel[endpoint] = (ctx, sock)
    if len(_channel) == 1:
        atexit.register(_close)
    return sock


def _send(sock, data: bytes) -> bool:
    import zmq

    try:
        sock.send(data, zmq.NOBLOCK)
        return True
    except zmq.ZMQError:  # zmq.Again: no collector, or it is behind; drop the report
        return False


def _close():
    """Gives queued reports up to _LINGER_MS to leave, then releases the sockets."""
    for ctx, sock in _channel.values():
        if sock is not None:
            sock.close()
            ctx.term()
    _channel.clear()
