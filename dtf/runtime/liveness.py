"""Telling a dead peer from a hung one.

A peer silent to pings for PING_TIMEOUT_S used to be taken for dead, and its step failed
as Unavailable: a ps stopped for half a minute (SIGSTOP, swapping, a long GC pause) then
sent training back to its last checkpoint although the ps still held newer values. A
process that is merely stopped still owns its listening port, and the kernel completes
TCP handshakes for it; a dead one's port refuses them (or, host gone, does not answer).
So a silent peer whose port still accepts connections is hung: callers keep waiting, up
to ``DTF_HUNG_PEER_TIMEOUT_S``, and a later ping answered with the same incarnation lets
the step go on. Only a new incarnation (a restarted process) or a refused port ends it.
"""
from __future__ import annotations

import logging
import socket
import time

from dtf.framework import errors
from dtf.runtime import env

log = logging.getLogger("dtf")

HUNG_LIMIT_ENV = "DTF_HUNG_PEER_TIMEOUT_S"
DEFAULT_HUNG_LIMIT_S = 300.0
CONNECT_PROBE_S = 1.0


def hung_limit_s() -> float:
    return max(0.0, env.seconds(HUNG_LIMIT_ENV, DEFAULT_HUNG_LIMIT_S))


def port_accepts(address: str, timeout_s: float = CONNECT_PROBE_S) -> bool:
    """Whether something still listens at ``address`` (host:port): the kernel answers a
    TCP handshake for a stopped process, never for a dead one."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


class SilentPeer:
    """The silence of one peer during one wait: ``answered()`` when a ping comes back,
    ``judge(address, error)`` when one does not (it raises ``error`` when the peer is dead
    or has been hung past the limit, else returns and the caller waits on)."""

    __slots__ = ("since", "warned")

    def __init__(self):
        self.since = None
        self.warned = False

    def answered(self):
        if self.since is not None and self.warned:
            log.warning("answering again after %.0f s of silence", time.monotonic() - self.since)
        self.since = None
        self.warned = False

    def judge(self, address: str, error: errors.OpError, accepts=None):
        """``accepts``: the result of port_accepts(address) when the caller probed already."""
        now = time.monotonic()
        if self.since is None:
            from dtf.wire import transport

            self.since = now - transport.PING_TIMEOUT_S
        silent_s = now - self.since
        limit = hung_limit_s()
        if silent_s >= limit:
            raise type(error)(error.node_def, error.op, f"{error.message}; silent for {silent_s:.0f} s "
                              f"although its port accepts connections (hung? {HUNG_LIMIT_ENV}={limit:g})")
        if accepts is None:
            accepts = port_accepts(address)
        if not accepts:
            raise error
        if not self.warned:
            self.warned = True
            log.warning("%s at %s does not answer pings but its port accepts connections: "
                        "taken for hung, not dead; waiting up to %.0f s", _who(error), address, limit)


def _who(error) -> str:
    return error.message.split(" at ", 1)[0]
