"""Same-host tensor transfer through POSIX shared memory (/dev/shm).

A large tensor for a task on this host is copied once into shared memory and only a
small notice travels on the socket; the receiver uses the mapped memory as the tensor.

Writing into fresh tmpfs pages costs page faults (about 4x a memcpy here), and mapping a
file costs the reader page-table work, so a sender keeps a pool of reusable segments and a
receiver keeps them mapped: in the steady state a transfer is one memcpy.

A segment is an anonymous shared-memory file (memfd ``dtf-<hex>``, mode 0600) that the
receiver opens through the sender's ``/proc/<pid>/fd/<fd>`` (allowed only to processes
that may inspect the sender: the same user). It has no name to leak: it vanishes with the
last process using it, however that process ends. It holds one control page, then the
data. The control page holds two int64 words, [issued sequence, taken sequence]. The
sender claims a free segment under an exclusive ``flock`` and writes a new issued
sequence; the notice carries that sequence. The receiver holds a shared ``flock`` while
its array lives (released by a finalizer on the array's buffer, or by the kernel if the
receiver dies) and records the sequence as taken. A segment is free again once taken and
unlocked, or once its notice has gone untaken for UNTAKEN_S (its message was lost): a late
take then finds another sequence and fails cleanly instead of reading reused memory.

When every segment is busy and the pool is at POOL_BYTES, a tensor goes into a fresh file
``dtf-<hex>`` that the receiver maps and unlinks at once (freed with its array).

Notices name files, so names are checked strictly (our prefixes, a regular file owned by
this user and private to it, large enough for the dtype and shape; for a segment, the
opened descriptor must be the sender's memfd of that exact name) before anything is
mapped. Nothing in a notice is evaluated: it is plain JSON data.
"""
from __future__ import annotations

import atexit
import collections
import fcntl
import itertools
import mmap
import os
import re
import secrets
import socket
import stat
import threading
import time
import weakref

import numpy as np

from dtf.framework import dtypes

SHM_DIR = "/dev/shm"
MIN_BYTES = 1 << 20  # below this the socket is as fast
POOL_BYTES = 1 << 30  # segments one sender keeps, in all
UNTAKEN_S = 60.0  # a notice not taken within this was lost with its message
HEAD = mmap.ALLOCATIONGRANULARITY  # the control page; data starts aligned after it
_RECEIVER_KEEPS = 32  # mapped segments a receiver keeps while their files exist
_NAME = re.compile(r"^dtf-[0-9a-f]{32}$")
_SEGMENT_ID = re.compile(r"^[0-9a-f]{32}$")
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
# Fresh files recently written. A receiver takes (unlinks) a file within its step, so a
# file still present when 4096 newer ones exist was abandoned: it is removed then, and at
# exit.
_KEEP = 4096
_created: collections.deque = collections.deque()
_created_lock = threading.Lock()

_WRITABLE = os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)


def enabled() -> bool:
    """Shared memory is used where /dev/shm is writable, unless DTF_SHM=0."""
    return _WRITABLE and os.environ.get("DTF_SHM", "1") != "0"


def is_local(address: str) -> bool:
    """Whether ``address`` is on this host (asked for every message sent: kept per address)."""
    local = _local_addresses.get(address)
    if local is None:
        host = address.rpartition(":")[0].strip("[]")
        local = host in _LOCAL_HOSTS or host.startswith("127.") or host == socket.gethostname()
        if len(_local_addresses) < 4096:
            _local_addresses[address] = local
    return local


_local_addresses: dict = {}


def worth_it(value: np.ndarray) -> bool:
    # String tensors need the socket's framing (their lengths travel in the header).
    return value.nbytes >= MIN_BYTES and value.dtype.kind not in "OUS" and enabled()


def put(value: np.ndarray) -> dict:
    """Copies ``value`` into shared memory; returns the notice describing it."""
    notice = {"dtype": dtypes.as_dtype(value.dtype).name, "shape": list(value.shape)}
    seg = _sender.claim(value.nbytes)
    if seg is None:
        notice["name"] = _put_file(value)
        return notice
    dst = np.frombuffer(seg.data, value.dtype, value.size).reshape(value.shape)
    np.copyto(dst, value)  # strided inputs too, without an intermediate copy
    notice.update(pid=seg.pid, fd=seg.fd, id=seg.id, seq=seg.seq)
    return notice


def take(notice: dict) -> np.ndarray:
    """The read-only array a notice describes."""
    dtype, shape, size = _describe(notice)
    if "id" in notice:
        return _receiver.take(_segment_key(notice), notice.get("seq"), dtype, shape, size)
    name = notice.get("name")
    if isinstance(name, str) and _NAME.match(name):
        return _take_file(name, dtype, shape, size)
    raise ValueError("bad shared-memory tensor name")


def _segment_key(notice):
    pid, fd, sid = notice.get("pid"), notice.get("fd"), notice.get("id")
    if (type(pid) is not int or type(fd) is not int or not 0 < pid < 1 << 31
            or not 0 <= fd < 1 << 31 or not isinstance(sid, str) or not _SEGMENT_ID.match(sid)):
        raise ValueError("bad shared-memory segment name")
    return pid, fd, sid


def _describe(notice):
    try:
        dtype = np.dtype(dtypes.as_dtype(notice["dtype"]).as_numpy_dtype)
        shape = [int(d) for d in notice["shape"]]
    except (KeyError, TypeError, ValueError):
        raise ValueError("bad shared-memory tensor description") from None
    if dtype == object or any(d < 0 for d in shape):
        raise ValueError("bad shared-memory tensor description")
    return dtype, shape, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def _open_private(path, flags, min_size):
    """Opens ``path`` after checking it is a file a sender of ours made."""
    fd = os.open(path, flags)
    st = os.fstat(fd)
    if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077
            or st.st_size < min_size):
        os.close(fd)
        raise ValueError("shared-memory tensor file does not match its description")
    return fd, st.st_size


# -- fresh files: the fallback when the pool is busy ----------------------------------------
def _put_file(value):
    name = f"dtf-{secrets.token_hex(16)}"
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    with _created_lock:
        _created.append(path)
        if len(_created) > _KEEP:
            _unlink_quietly(_created.popleft())
    try:
        view = memoryview(np.ascontiguousarray(value).reshape(-1).view(np.uint8))
        written = 0
        while written < len(view):
            written += os.write(fd, view[written:])
    finally:
        os.close(fd)
    return name


def _take_file(name, dtype, shape, size):
    fd, file_size = _open_private(os.path.join(SHM_DIR, name), os.O_RDONLY | os.O_NOFOLLOW,
                                  size)
    try:
        if file_size != size:
            raise ValueError("shared-memory tensor file does not match its description")
        os.unlink(os.path.join(SHM_DIR, name))
        if size == 0:
            return np.zeros(shape, dtype)
        m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                      prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    return np.frombuffer(m, dtype=dtype).reshape(shape)


# -- the sender's pool ----------------------------------------------------------------------
class _Segment:
    """A reusable memfd this process writes tensors into."""

    def __init__(self, size, seq):
        self.id = secrets.token_hex(16)
        self.pid = os.getpid()
        self.size = size
        self.fd = os.memfd_create(f"dtf-{self.id}", os.MFD_CLOEXEC)
        try:
            os.fchmod(self.fd, 0o600)
            os.ftruncate(self.fd, HEAD + size)
            self.data = mmap.mmap(self.fd, size, offset=HEAD)
            self._ctrl = mmap.mmap(self.fd, HEAD)
        except OSError:
            self.drop()
            raise
        self.words = np.frombuffer(self._ctrl, np.int64, 2)  # [issued, taken]
        self._issue(seq)

    def try_claim(self, seq, now) -> bool:
        """Issues the segment under ``seq`` if its last receiver is done with it."""
        if self.words[1] != self.seq and now - self.sent_at < UNTAKEN_S:
            return False
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a receiver's array still uses it
        try:
            self._issue(seq)  # under the lock: a late take of the old notice fails
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        return True

    def _issue(self, seq):
        self.seq = seq
        self.sent_at = time.monotonic()
        self.words[0] = seq

    def drop(self):
        os.close(self.fd)  # the memory goes with the last mapping, here or in a receiver


class _Sender:
    def __init__(self):
        self.segments: list[_Segment] = []
        self.lock = threading.Lock()
        self.seq = itertools.count(1)

    def claim(self, nbytes):
        """A segment issued for ``nbytes``, or None when the pool is full and busy."""
        size = max(MIN_BYTES, 1 << (nbytes - 1).bit_length())  # power-of-two classes
        if size > POOL_BYTES:
            return None
        with self.lock:
            now = time.monotonic()
            for seg in self.segments:
                if seg.size == size and seg.try_claim(next(self.seq), now):
                    return seg
            if not self._make_room(size, now):
                return None
            seg = _Segment(size, next(self.seq))
            self.segments.append(seg)
            return seg

    def _make_room(self, size, now):
        """Drops free segments of other sizes until ``size`` more bytes fit the pool."""
        total = sum(s.size for s in self.segments)
        for seg in list(self.segments):
            if total + size <= POOL_BYTES:
                break
            if seg.try_claim(next(self.seq), now):
                self.segments.remove(seg)
                seg.drop()
                total -= seg.size
        return total + size <= POOL_BYTES

    def close(self):
        with self.lock:
            for seg in self.segments:
                seg.drop()
            self.segments.clear()


# -- the receiver's mappings ----------------------------------------------------------------
def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Mapped:
    """A sender's segment as this process maps it."""

    def __init__(self, key):
        pid, fd, sid = key
        self.pid = pid
        path, target = f"/proc/{pid}/fd/{fd}", f"/memfd:dtf-{sid} (deleted)"
        if os.readlink(path) != target:  # never open what is not a segment (a fifo, a tty)
            raise ValueError("shared-memory segment is not the one named")
        self.fd, file_size = _open_private(path, os.O_RDWR, HEAD + MIN_BYTES)
        try:
            # The sender may have closed that number and reused it in between.
            if os.readlink(f"/proc/self/fd/{self.fd}") != target:
                raise ValueError("shared-memory segment is not the one named")
            self._ctrl = mmap.mmap(self.fd, HEAD)
            self.data = mmap.mmap(self.fd, file_size - HEAD, offset=HEAD, prot=mmap.PROT_READ,
                                  flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        except (OSError, ValueError):
            os.close(self.fd)
            raise
        self.words = np.frombuffer(self._ctrl, np.int64, 2)
        self.busy = False

    def take(self, seq, dtype, shape, size):
        if self.busy or not isinstance(seq, int) or size > len(self.data):
            raise ValueError("shared-memory tensor does not match its segment")
        fcntl.flock(self.fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # BlockingIOError: reclaimed
        if self.words[0] != seq:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            raise ValueError("shared-memory tensor was reclaimed by its sender")
        self.words[1] = seq
        self.busy = True
        arr = np.frombuffer(self.data, dtype, size // dtype.itemsize)
        # Every view of arr keeps arr.base alive: when it goes, the sender may reuse.
        weakref.finalize(arr.base, self._release)
        return arr.reshape(shape)

    def _release(self):
        self.busy = False
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def stale(self) -> bool:
        """Idle and its sender gone: only this mapping still holds the memory."""
        return not self.busy and not _alive(self.pid)

    def close(self):
        os.close(self.fd)


class _Receiver:
    def __init__(self):
        self.mapped: collections.OrderedDict[str, _Mapped] = collections.OrderedDict()
        self.lock = threading.Lock()

    def take(self, key, seq, dtype, shape, size):
        with self.lock:
            seg = self.mapped.get(key)
            if seg is None:
                self._forget_stale()
                seg = self.mapped[key] = _Mapped(key)
            self.mapped.move_to_end(key)
            return seg.take(seq, dtype, shape, size)

    def _forget_stale(self):
        idle = [k for k, s in self.mapped.items() if not s.busy]
        excess = len(self.mapped) + 1 - _RECEIVER_KEEPS
        for i, key in enumerate(idle):  # least recently used first
            if i < excess or self.mapped[key].stale():
                self.mapped.pop(key).close()


_sender = _Sender()
_receiver = _Receiver()


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass


@atexit.register
def _cleanup():
    _sender.close()
    with _created_lock:
        for path in _created:
            _unlink_quietly(path)
        _created.clear()
