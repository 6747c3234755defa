"""The transport's public face: what the runtime, the client and the tools import.

The transport is in parts, lowest first (docs/protocol.md, "Wire structure"):

- ``frames``: a multipart message in and out of one connection, a ZeroMQ socket or a
  same-host lane (dtf.wire.lane) alike, and the poller the server loop keeps;
- ``endpoints``: where a task listens and how a client reaches it (TCP, or a lane
  learned from the task over TCP), and the frame limit a task sets;
- ``primitives``: one kind each of wake-up, timer queue and thread pool, which the server
  loop, a master step's reply pump and ``Peers`` (dtf.runtime.service) all use;
- ``client``: ``Client``, synchronous requests from any thread, and the error replies;
- ``server``: ``ServerLoop``, a task's I/O thread with handlers on a pool;
- ``inprocess``: tasks served by this process, reached by direct calls (no encoding;
  imported on its own by those that choose a task's route).

Besides cluster keys (``security``), the check of a silent task's keys (``handshake``) and
the flood guard that watches a listener (``flood``), only ``frames``, ``endpoints``,
``client`` and ``server`` import zmq. The names below are the parts' own objects (no
wrappers): one used on a hot path costs nothing more for being reached through here.
"""
from __future__ import annotations

from .client import (PING_EVERY_S, PING_TIMEOUT_S, Client, Unreachable, error_reply,
                     raise_for_error)
from .endpoints import (ask_lane, bind_endpoints, connect_endpoint, connect_lane,
                        ipc_enabled, max_frame_bytes, tcp_endpoint)
from .frames import context, poll_readable, readable, recv_frames, send_frames
from .primitives import HandlerPool, Outcome, TimerHandle, Timers, Wakeup
from .server import HANDSHAKE_S, ServerLoop

__all__ = [
    "PING_EVERY_S", "PING_TIMEOUT_S", "Client", "Unreachable", "error_reply", "raise_for_error",
    "ask_lane", "bind_endpoints", "connect_endpoint", "connect_lane", "ipc_enabled",
    "max_frame_bytes", "tcp_endpoint",
    "context", "poll_readable", "readable", "recv_frames", "send_frames",
    "HandlerPool", "Outcome", "TimerHandle", "Timers", "Wakeup",
    "HANDSHAKE_S", "ServerLoop",
]
