"""Same-host tensor transfer through POSIX shared memory (/dev/shm).

A large tensor for a task on this host is written once into a fresh file in /dev/shm
(a kernel copy, no page faults on our side) and only a small notice travels on the
socket. The receiver maps the file read-only, unlinks it at once (the mapping keeps the
pages until the array is freed) and uses the mapping as the tensor: one copy in all,
instead of socket copies through the kernel's TCP stack.

The notice names a file, so names are checked strictly (our prefix, hex only, a regular
file owned by this user, the exact size the dtype and shape need) before anything is
mapped.
"""
from __future__ import annotations

import atexit
import collections
import mmap
import os
import re
import secrets
import socket
import stat
import threading

import numpy as np

from dtf.framework import dtypes

SHM_DIR = "/dev/shm"
MIN_BYTES = 1 << 20  # below this the socket is as fast
_NAME = re.compile(r"^dtf-[0-9a-f]{32}$")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
# Recently written files. A receiver takes (unlinks) a file within its step, so a file
# still present when 4096 newer ones exist was abandoned (its reader died or gave up):
# it is removed then, and at exit.
_KEEP = 4096
_created: collections.deque = collections.deque()
_created_lock = threading.Lock()


_WRITABLE = os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)


def enabled() -> bool:
    """Shared memory is used where /dev/shm is writable, unless DTF_SHM=0."""
    return _WRITABLE and os.environ.get("DTF_SHM", "1") != "0"


def is_local(address: str) -> bool:
    host = address.rpartition(":")[0].strip("[]")
    return host in _LOCAL_HOSTS or host.startswith("127.") or host == socket.gethostname()


def worth_it(value: np.ndarray) -> bool:
    return value.nbytes >= MIN_BYTES and value.dtype != object and enabled()


def put(value: np.ndarray) -> dict:
    """Writes ``value`` to a new shared-memory file; returns the notice describing it."""
    name = f"dtf-{secrets.token_hex(16)}"
    path = os.path.join(SHM_DIR, name)
    arr = np.ascontiguousarray(value)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with _created_lock:
        _created.append(path)
        if len(_created) > _KEEP:
            _unlink_quietly(_created.popleft())
    try:
        view = memoryview(arr.reshape(-1).view(np.uint8))
        written = 0
        while written < len(view):
            written += os.write(fd, view[written:])
    finally:
        os.close(fd)
    return {"name": name, "dtype": dtypes.as_dtype(arr.dtype).name, "shape": list(arr.shape)}


def take(notice: dict) -> np.ndarray:
    """Maps the file a notice names as a read-only array and unlinks it."""
    name = notice.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError("bad shared-memory tensor name")
    try:
        dtype = np.dtype(dtypes.as_dtype(notice["dtype"]).as_numpy_dtype)
        shape = [int(d) for d in notice["shape"]]
    except (KeyError, TypeError, ValueError):
        raise ValueError("bad shared-memory tensor description") from None
    if dtype == object or any(d < 0 for d in shape):
        raise ValueError("bad shared-memory tensor description")
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size != size:
            raise ValueError("shared-memory tensor file does not match its description")
        os.unlink(path)
        if size == 0:
            return np.zeros(shape, dtype)
        m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                      prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    return np.frombuffer(m, dtype=dtype).reshape(shape)


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


@atexit.register
def _cleanup():
    with _created_lock:
        for path in _created:
            _unlink_quietly(path)
        _created.clear()
