"""Asking every task of a cluster at once whether it is up (Ping) or how it is (Status).

A quick TCP connect comes first: a port nobody listens on is refused at once, while a
ZeroMQ request to it would wait out its whole timeout.
"""
from __future__ import annotations

import socket
import time


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    host = "127.0.0.1" if host in ("localhost", "0.0.0.0", "") else host.strip("[]")
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def ask_all(tasks, message_type: str, timeout_s: float) -> dict:
    """{task: reply dict or None}; None when the task did not answer within ``timeout_s``."""
    return survey(tasks, message_type, timeout_s)[0]


def survey(tasks, message_type: str, timeout_s: float):
    """({task: reply dict or None}, [tasks whose port accepts connections]).

    A port that accepts connections but never answers is typically a task of a cluster with
    other keys (CURVE handshakes with the wrong keys fail silently)."""
    from dtf.wire import transport

    replies = {t: None for t in tasks}
    listening = [t for t in tasks if port_open(t.host, t.port, timeout_s)]
    if not listening:
        return replies, listening
    client = transport.Client()
    kind = "ping" if message_type == "Ping" else "rpc"
    try:
        sent = [(t, client.send(t.address, {"type": message_type}, kind)) for t in listening]
        deadline = time.monotonic() + timeout_s
        for task, rid in sent:
            try:
                reply = client.receive(task.address, rid, max(0.0, deadline - time.monotonic()), kind)
            except transport.Unreachable:
                continue
            if reply.get("ok", True):
                replies[task] = reply
    finally:
        client.close()
    return replies, listening


def is_task(reply, task) -> bool:
    """Whether a Ping/Status reply comes from ``task`` (not another cluster on that port)."""
    return bool(reply) and reply.get("task") == task.device_name


def up_tasks(tasks, timeout_s: float = 1.0) -> dict:
    """{task: reply} for the tasks answering Ping as themselves."""
    return {t: r for t, r in ask_all(tasks, "Ping", timeout_s).items() if is_task(r, t)}


def ports_free(tasks, timeout_s: float) -> list:
    """Waits until no local task port accepts connections; returns those still taken."""
    deadline = time.monotonic() + timeout_s
    while True:
        taken = [t for t in tasks if port_open(t.host, t.port, 0.2)]
        if not taken or time.monotonic() >= deadline:
            return taken
        time.sleep(0.05)
