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
