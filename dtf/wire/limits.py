"""What a task holds on behalf of peers it cannot trust yet: descriptors and bytes.

A flood of idle connections from a local user without keys must not end a task or
starve its keyed clients, and peers sending half a message must not make it hold more
than it has received (docs/reliability.md).
"""
from __future__ import annotations

import errno
import os
import threading

try:
    import resource
except ImportError:  # not POSIX: nothing to raise
    resource = None

# Descriptors a process may hold when its hard limit says "unlimited" (Linux refuses that
# as a soft limit): more than a flood of connections on one machine gets to.
_UNLIMITED_FILES = 1 << 20
_raised = False


def raise_open_file_limit() -> int:
    """Raises this process's soft limit on open files to its hard limit (once), so that a
    flood of idle connections meets the limit an administrator set, not the default of
    1,024 that a login shell hands out. Returns the soft limit now in force (-1: none)."""
    global _raised
    if resource is None:
        return -1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if _raised or soft == hard:
        return soft
    _raised = True
    target = _UNLIMITED_FILES if hard == resource.RLIM_INFINITY else hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # e.g. above fs.nr_open: keep what there was
        return soft
    return target


class SpareDescriptor:
    """One descriptor kept in reserve, so that a listener whose ``accept`` fails for want
    of descriptors can still take the connection off its queue and close it. Left queued,
    the connection would keep the listener readable and its poller spinning."""

    def __init__(self):
        self._lock = threading.Lock()
        self._fd = self._open()

    @staticmethod
    def _open() -> int:
        try:
            return os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return -1

    def shed(self, listener) -> bool:
        """Accepts one waiting connection of ``listener`` with the spare descriptor and
        closes it at once; False when there was none or no descriptor could be freed."""
        with self._lock:
            if self._fd < 0:
                self._fd = self._open()
                if self._fd < 0:
                    return False
            os.close(self._fd)
            self._fd = -1
            try:
                sock, _ = listener.accept()
                sock.close()
                shed = True
            except OSError:
                shed = False
            self._fd = self._open()
            return shed


def out_of_descriptors(e: OSError) -> bool:
    return e.errno in (errno.EMFILE, errno.ENFILE)


ENV_MAX_INFLIGHT = "DTF_MAX_INFLIGHT_BYTES"


# Under a low message limit, still room for several messages arriving at once.
MIN_INFLIGHT_BYTES = 256 << 20


def max_inflight_bytes(max_message_bytes: int) -> int:
    """A task's budget for messages still arriving (default: its message limit, at least
    MIN_INFLIGHT_BYTES)."""
    return int(os.environ.get(ENV_MAX_INFLIGHT, max(max_message_bytes, MIN_INFLIGHT_BYTES)))


class InflightBudget:
    """The bytes a task has set aside for messages still arriving, from all its peers
    together: a half-sent message on a lane, a tensor streamed in parts. Each sender is
    also bound by the message limit; this bounds them all, so that many connections each
    declaring a size under the limit cannot make the task reserve many times it."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._held = 0
        self._lock = threading.Lock()  # streams and lanes are filled on the I/O thread; cheap anyway

    def reserve(self, nbytes: int) -> bool:
        with self._lock:
            if self._held + nbytes > self.max_bytes:
                return False
            self._held += nbytes
            return True

    def release(self, nbytes: int):
        with self._lock:
            self._held -= nbytes

    @property
    def held(self) -> int:
        return self._held
