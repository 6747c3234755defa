"""The on-disk checkpoint format (see docs/checkpoint_format.md).

A checkpoint prefix ``P`` is ``P.index`` (JSON: tensor names, dtypes, shapes, offsets,
CRC32s, and the data files it uses) plus raw data files ``P.data-SSSSS-of-NNNNN``.

Crash safety: every file is written under a temporary name, fsynced and renamed, and the
index is renamed last. A data file still referenced by the current index is never
overwritten (a save to the same prefix writes the other of two alternate names), so until
the new index lands the previous checkpoint stays whole.
"""
from __future__ import annotations

import json
import os
import struct
import uuid
import zlib

import numpy as np

from dtf.framework import dtypes, errors

FORMAT = "dtf-checkpoint-v1"
_ALT_SUFFIX = ".alt"


def index_path(prefix: str) -> str:
    return prefix + ".index"


def data_path(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def exists(prefix: str) -> bool:
    return os.path.isfile(index_path(prefix))


# -- encoding ----------------------------------------------------------------------
def _encode(arr: np.ndarray, dtype: str) -> bytes:
    if dtype == "string":
        parts = []
        for v in arr.reshape(-1):
            b = v if isinstance(v, bytes) else str(v).encode()
            parts += [struct.pack("<I", len(b)), b]
        return b"".join(parts)
    npd = np.dtype(dtypes.as_dtype(dtype).as_numpy_dtype).newbyteorder("<")
    return np.ascontiguousarray(arr, dtype=npd).tobytes()


def _decode(buf: bytes, dtype: str, shape) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "string":
        out = np.empty(n, dtype=object)
        pos = 0
        for i in range(n):
            (length,) = struct.unpack_from("<I", buf, pos)
            out[i] = bytes(buf[pos + 4:pos + 4 + length])
            pos += 4 + length
        return out.reshape(shape)
    npd = np.dtype(dtypes.as_dtype(dtype).as_numpy_dtype)
    return np.frombuffer(buf, dtype=npd.newbyteorder("<")).astype(npd).reshape(shape)


# -- durable file writes --------------------------------------------------------------
def _write_chunk(f, chunk: bytes):
    """One write of a data chunk (a seam tests use to simulate a crash mid-write)."""
    f.write(chunk)


def _fsync_dir(directory: str):
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_quietly(path: str):
    try:
        os.remove(path)
    except OSError:
        pass


def atomic_write(path: str, chunks):
    """Writes ``chunks`` to a temporary file, fsyncs it and renames it onto ``path``."""
    tmp = f"{path}.tmp{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                _write_chunk(f, chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _remove_quietly(tmp)
        if e.filename is None:  # a failed write or fsync (disk full) names no file: this one
            raise OSError(e.errno, e.strerror, path) from e
        raise
    except BaseException:
        _remove_quietly(tmp)
        raise
    _fsync_dir(os.path.dirname(path))


def _referenced_data(prefix: str) -> set:
    """Absolute paths of the data files the current index at ``prefix`` uses."""
    try:
        idx = read_index(prefix)
    except errors.OpError:
        return set()
    d = os.path.dirname(prefix)
    return {os.path.abspath(os.path.join(d, f)) for f in idx["data_files"]}


def _fresh_data_name(base: str, referenced: set) -> str:
    """``base``, or its alternate when the live checkpoint still reads ``base``."""
    return base + _ALT_SUFFIX if os.path.abspath(base) in referenced else base


def _commit_index(prefix: str, data_files: list, tensors: dict, old_data: set):
    body = json.dumps({"format": FORMAT, "data_files": data_files, "tensors": tensors},
                      sort_keys=True, indent=1).encode()
    atomic_write(index_path(prefix), [body])
    d = os.path.dirname(prefix)
    keep = {os.path.abspath(os.path.join(d, f)) for f in data_files}
    for stale in old_data - keep:
        _remove_quietly(stale)


# -- public API --------------------------------------------------------------------
def write(prefix: str, names, arrays):
    """Writes one complete single-file checkpoint of ``arrays`` at ``prefix``."""
    old = _referenced_data(prefix)
    tensors, chunks, offset = {}, [], 0
    for name, arr in zip(names, arrays):
        arr = np.asarray(arr)
        dtype = dtypes.as_dtype(arr.dtype).name
        buf = _encode(arr, dtype)
        tensors[name] = {"dtype": dtype, "shape": list(arr.shape), "shard": 0,
                         "offset": offset, "length": len(buf), "crc32": zlib.crc32(buf)}
        chunks.append(buf)
        offset += len(buf)
    data_file = _fresh_data_name(data_path(prefix, 0, 1), old)
    atomic_write(data_file, chunks)
    _commit_index(prefix, [os.path.basename(data_file)], tensors, old)


def merge(sources, dest: str):
    """Merges single-file checkpoints (one per shard, same directory) into ``dest``."""
    old = _referenced_data(dest)
    n = len(sources)
    tensors, data_files = {}, []
    for shard, src in enumerate(sources):
        idx = read_index(src)
        (src_data,) = idx["data_files"]
        target = _fresh_data_name(data_path(dest, shard, n), old)
        os.replace(os.path.join(os.path.dirname(src), src_data), target)
        data_files.append(os.path.basename(target))
        for name, entry in idx["tensors"].items():
            tensors[name] = dict(entry, shard=shard)
    _fsync_dir(os.path.dirname(dest))
    _commit_index(dest, data_files, tensors, old)
    for src in sources:
        _remove_quietly(index_path(src))


def read_index(prefix: str) -> dict:
    path = index_path(prefix)
    try:
        with open(path, "rb") as f:
            idx = json.loads(f.read())
    except FileNotFoundError:
        raise errors.NotFoundError(
            None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any "
            f"matching files for {prefix}") from None
    except (OSError, ValueError) as e:
        raise errors.DataLossError(None, None, f"Unable to read checkpoint index {path}: {e}") from None
    if not isinstance(idx, dict) or idx.get("format") != FORMAT:
        raise errors.DataLossError(None, None, f"{path} is not a {FORMAT} checkpoint index")
    data_files = idx.get("data_files")
    if not isinstance(data_files, list) or not isinstance(idx.get("tensors"), dict):
        raise errors.DataLossError(None, None, f"{path}: malformed checkpoint index (data_files, tensors)")
    for name in data_files:
        _check_data_file_name(path, prefix, name)
    return idx


def _check_data_file_name(index_file: str, prefix: str, name):
    """A data file an index names must be this checkpoint's own file, beside its index:
    an index naming ``../x`` or ``/etc/x`` would otherwise have that path read, and deleted
    when the checkpoint is overwritten or rotated out."""
    own = os.path.basename(prefix) + ".data-"
    if (not isinstance(name, str) or not name.startswith(own) or os.path.basename(name) != name
            or "/" in name or os.sep in name or (os.altsep and os.altsep in name) or "\0" in name):
        raise errors.DataLossError(
            None, None, f"{index_file} names data file {name!r}, which is not a file of this "
            f"checkpoint (expected a name starting {own!r} in the same directory): refused")


def read_tensor(prefix: str, index: dict, name: str) -> np.ndarray:
    entry = index["tensors"].get(name)
    if entry is None:
        raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
    shard = entry.get("shard") if isinstance(entry, dict) else None
    if not isinstance(shard, int) or not 0 <= shard < len(index["data_files"]):
        raise errors.DataLossError(None, None, f"Checkpoint {prefix}: key {name} names shard {shard!r}, "
                                   f"not one of its {len(index['data_files'])} data files")
    path = os.path.join(os.path.dirname(prefix), index["data_files"][shard])
    try:
        with open(path, "rb") as f:
            f.seek(entry["offset"])
            buf = f.read(entry["length"])
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"Checkpoint data file {path} not found") from None
    if len(buf) != entry["length"] or zlib.crc32(buf) != entry["crc32"]:
        raise errors.DataLossError(
            None, None, f"Checksum does not match for key {name} in {path}: the checkpoint "
            "data is truncated or corrupted")
    return _decode(buf, entry["dtype"], entry["shape"])


def remove(prefix: str):
    """Deletes the checkpoint at ``prefix`` (its index first, so it never half-exists)."""
    data = _referenced_data(prefix)
    _remove_quietly(index_path(prefix))
    for path in data:
        _remove_quietly(path)
