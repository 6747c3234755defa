"""Checkpoint files on disk (see docs/checkpoint_format.md).

Saves are TensorFlow's V2 tensor bundle (dtf/state/tensor_bundle.py), so TF restores
what dtf writes and dtf restores what TF writes. Reads also accept dtf's earlier format
(a JSON ``.index``), so old dtf checkpoints stay usable.

Crash safety: every file is written under a temporary name, fsynced and renamed, data
before index, so a checkpoint is never visible before its data is whole on disk.
"""
from __future__ import annotations

import json
import os
import struct
import uuid
import zlib

import numpy as np

from dtf.framework import dtypes, errors

# The bundle codec (sstable, tensor_bundle, graph protos) is imported when a checkpoint is
# first written or read: most processes that import dtf never touch one.
LEGACY_FORMAT = "dtf-checkpoint-v1"


def index_path(prefix: str) -> str:
    return prefix + ".index"


def data_path(prefix: str, shard: int, num_shards: int) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def exists(prefix: str) -> bool:
    return os.path.isfile(index_path(prefix))


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


def _write_temp(path: str, chunks) -> str:
    """Writes ``chunks`` beside ``path`` under a temporary name, fsynced; returns that name."""
    tmp = f"{path}.tmp{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            for chunk in chunks:
                _write_chunk(f, chunk)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        _remove_quietly(tmp)
        if e.filename is None:  # a failed write or fsync (disk full) names no file: this one
            raise OSError(e.errno, e.strerror, path) from e
        raise
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp


def atomic_write(path: str, chunks):
    """Writes ``chunks`` to a temporary file, fsyncs it and renames it onto ``path``."""
    os.replace(_write_temp(path, chunks), path)
    _fsync_dir(os.path.dirname(path))


def _commit(renames):
    """Renames (temporary, final) pairs in order, then fsyncs the directory."""
    for tmp, final in renames:
        os.replace(tmp, final)
    if renames:
        _fsync_dir(os.path.dirname(renames[-1][1]))


# -- writing ----------------------------------------------------------------------------
def write(prefix: str, names, arrays, slice_specs=None):
    """Writes one complete single-shard V2 checkpoint of ``arrays`` at ``prefix``."""
    from . import tensor_bundle

    chunks, entries = tensor_bundle.layout(list(names), list(arrays), slice_specs)
    old = _data_files(prefix)
    data_tmp = _write_temp(data_path(prefix, 0, 1), chunks)
    try:
        index_tmp = _write_temp(index_path(prefix), [tensor_bundle.index_bytes(entries, 1)])
    except BaseException:
        _remove_quietly(data_tmp)
        raise
    _commit([(data_tmp, data_path(prefix, 0, 1)), (index_tmp, index_path(prefix))])
    for stale in old - {os.path.abspath(data_path(prefix, 0, 1))}:
        _remove_quietly(stale)


def merge(sources, dest: str):
    """Merges single-shard checkpoints (one per shard, same file system) into ``dest``:
    shard i's data file becomes ``dest.data-i-of-N`` under one merged index."""
    from . import tensor_bundle

    n = len(sources)
    old = _data_files(dest)
    shards = [tensor_bundle.shard_entries(_read_table(src)) for src in sources]
    index_tmp = _write_temp(index_path(dest), [tensor_bundle.merged_index(shards)])
    renames = [(data_path(src, 0, 1), data_path(dest, i, n)) for i, src in enumerate(sources)]
    try:
        _commit(renames + [(index_tmp, index_path(dest))])
    except BaseException:
        _remove_quietly(index_tmp)
        raise
    for stale in old - {os.path.abspath(data_path(dest, i, n)) for i in range(n)}:
        _remove_quietly(stale)
    for src in sources:
        _remove_quietly(index_path(src))


def remove(prefix: str):
    """Deletes the checkpoint at ``prefix`` (its index first, so it never half-exists)."""
    data = _data_files(prefix)
    _remove_quietly(index_path(prefix))
    for path in data:
        _remove_quietly(path)


def _data_files(prefix: str) -> set:
    """Absolute paths of the data files of the checkpoint now at ``prefix`` (if any)."""
    try:
        reader = open_reader(prefix)
    except errors.OpError:
        return set()
    return {os.path.abspath(p) for p in reader.data_files()}


# -- reading ---------------------------------------------------------------------------------
def _read_index_bytes(prefix: str) -> bytes:
    path = index_path(prefix)
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise errors.NotFoundError(
            None, None, "Unsuccessful TensorSliceReader constructor: Failed to find any "
            f"matching files for {prefix}") from None
    except OSError as e:
        raise errors.DataLossError(None, None, f"Unable to read checkpoint index {path}: {e}") from None


def _read_table(prefix: str) -> dict:
    from . import sstable

    return sstable.parse(_read_index_bytes(prefix), index_path(prefix))


def open_reader(prefix: str):
    """A reader of the checkpoint at ``prefix``: TF's V2 bundle, or dtf's earlier JSON format."""
    from . import sstable, tensor_bundle

    raw = _read_index_bytes(prefix)
    if raw[:1] == b"{":
        return LegacyReader(prefix, raw)
    return tensor_bundle.BundleReader(prefix, sstable.parse(raw, index_path(prefix)))


class LegacyReader:
    """dtf's earlier checkpoints: a JSON index (names, dtypes, shapes, offsets, CRC-32s)
    and raw data files; strings as uint32 length + bytes. Read-only."""

    def __init__(self, prefix: str, raw: bytes):
        self._prefix = prefix
        path = index_path(prefix)
        try:
            idx = json.loads(raw)
        except ValueError as e:
            raise errors.DataLossError(None, None, f"Unable to read checkpoint index {path}: {e}") from None
        if not isinstance(idx, dict) or idx.get("format") != LEGACY_FORMAT:
            raise errors.DataLossError(None, None, f"{path} is not a checkpoint index")
        data_files = idx.get("data_files")
        if not isinstance(data_files, list) or not isinstance(idx.get("tensors"), dict):
            raise errors.DataLossError(None, None, f"{path}: malformed checkpoint index (data_files, tensors)")
        for name in data_files:
            _check_data_file_name(path, prefix, name)
        self._index = idx
        self.entries = idx["tensors"]

    def names(self):
        return list(self.entries)

    def data_files(self):
        d = os.path.dirname(self._prefix)
        return [os.path.join(d, f) for f in self._index["data_files"]]

    def dtype_name(self, name) -> str:
        return self._entry(name)["dtype"]

    def shape(self, name) -> list:
        return list(self._entry(name)["shape"])

    def _entry(self, name):
        entry = self.entries.get(name)
        if entry is None:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        return entry

    def read_slice(self, name, spec):
        """A part of a tensor stored whole (this format kept partitioned variables whole)."""
        from .tensor_bundle import _index_of, parse_slice_spec

        full_shape, extents = parse_slice_spec(spec)
        value = self.read(name)
        if list(value.shape) != full_shape:
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; shape in shape_and_slice spec {full_shape} does "
                f"not match the shape stored in checkpoint: {list(value.shape)}")
        return value[_index_of(extents, full_shape)]

    def read(self, name) -> np.ndarray:
        entry = self._entry(name)
        shard = entry.get("shard") if isinstance(entry, dict) else None
        if not isinstance(shard, int) or not 0 <= shard < len(self._index["data_files"]):
            raise errors.DataLossError(None, None, f"Checkpoint {self._prefix}: key {name} names shard "
                                       f"{shard!r}, not one of its {len(self._index['data_files'])} data files")
        path = self.data_files()[shard]
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
        return _legacy_decode(buf, entry["dtype"], entry["shape"])


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


def _legacy_decode(buf: bytes, dtype: str, shape) -> np.ndarray:
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
