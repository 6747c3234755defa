"""TensorFlow's V2 checkpoint format, the tensor bundle (tensorflow/core/util/tensor_bundle).

A checkpoint prefix ``P`` is ``P.index`` (an sstable, dtf/state/sstable.py) and data
files ``P.data-SSSSS-of-NNNNN``. The index maps ``""`` to a BundleHeaderProto and each
tensor name (sorted bytewise) to a BundleEntryProto: dtype, shape, shard, offset and size
in that shard's data file, and the masked CRC-32C of those bytes. A partitioned variable is
one entry naming its slices (no data) plus one entry per slice, keyed by
``EncodeTensorNameSlice`` (an OrderedCode string of name and extents).

Tensor bytes: numeric tensors raw, C order, little-endian. A string tensor of n elements is
``varint64 len_0..len_n-1 | uint32 masked crc | bytes_0..bytes_n-1``, where the CRC covers
the lengths as uint32s, and the entry's CRC covers the lengths as uint32s, the length
checksum, then the bytes (as TF's WriteStringTensor).
"""
from __future__ import annotations

import struct

import numpy as np

from dtf.framework import crc32c, dtypes, errors
from dtf.framework.graph_pb import TensorShapeProto, datatype_enum, datatype_name
from dtf.framework.protowire import DecodeError, Field, Message, decode_varint, encode_varint
from dtf.framework.protowire import fields as _fields
from . import sstable
from .checkpoint_io import data_path, index_path

BUNDLE_VERSION = 1  # kTensorBundleVersion


class _VersionDef(Message):
    FIELDS = _fields((1, "producer", "int32"), (2, "min_consumer", "int32"))


class BundleHeaderProto(Message):
    FIELDS = _fields((1, "num_shards", "int32"), (2, "endianness", "enum"),
                     (3, "version", "message", _VersionDef))


class TensorSliceExtent(Message):
    FIELDS = _fields((1, "start", "int64"), Field(2, "length", "int64", oneof="has_length"))


class TensorSliceProto(Message):
    Extent = TensorSliceExtent
    FIELDS = _fields(Field(1, "extent", "message", TensorSliceExtent, repeated=True))


class BundleEntryProto(Message):
    FIELDS = _fields((1, "dtype", "enum"), (2, "shape", "message", TensorShapeProto),
                     (3, "shard_id", "int32"), (4, "offset", "int64"), (5, "size", "int64"),
                     (6, "crc32c", "fixed32"),
                     Field(7, "slices", "message", TensorSliceProto, repeated=True))


# -- tensor slices -------------------------------------------------------------------------
def _write_num_increasing(n: int) -> bytes:
    body = n.to_bytes((n.bit_length() + 7) // 8, "big") if n else b""
    return bytes([len(body)]) + body


def _write_signed_num_increasing(val: int) -> bytes:
    """OrderedCode::WriteSignedNumIncreasing: order-preserving, length in the high bits."""
    x = ~val if val < 0 else val
    if x < 64:
        return bytes([(0x80 ^ val) & 0xFF])
    length = 1 + x.bit_length() // 7 if x.bit_length() < 63 else 10
    buf = bytearray((val & ((1 << 80) - 1)).to_bytes(10, "big"))[10 - length:]
    header = {2: (0xC0, 0), 3: (0xE0, 0), 4: (0xF0, 0), 5: (0xF8, 0), 6: (0xFC, 0),
              7: (0xFE, 0), 8: (0xFF, 0), 9: (0xFF, 0x80), 10: (0xFF, 0xC0)}[length]
    buf[0] ^= header[0]
    buf[1] ^= header[1]
    return bytes(buf)


def _write_ordered_string(s: bytes) -> bytes:
    return s.replace(b"\xff", b"\xff\x00").replace(b"\x00", b"\x00\xff") + b"\x00\x01"


def slice_key(name: str, extents) -> bytes:
    """EncodeTensorNameSlice: the index key of one slice; extents are (start, length|-1)."""
    out = _write_num_increasing(0) + _write_ordered_string(name.encode())
    out += _write_num_increasing(len(extents))
    for start, length in extents:
        out += _write_signed_num_increasing(start) + _write_signed_num_increasing(length)
    return out


def parse_slice_spec(spec: str):
    """'5 2 0,3:-' -> ([5, 2], [(0, 3), (0, -1)]): full shape and (start, length|-1) per dim."""
    parts = spec.split()
    try:
        full_shape = [int(p) for p in parts[:-1]]
        extents = []
        for dim, ext in enumerate(parts[-1].split(":")):
            if ext == "-":
                extents.append((0, -1))
            else:
                start, length = (int(x) for x in ext.split(","))
                extents.append((start, length))
    except (ValueError, IndexError):
        raise errors.InvalidArgumentError(None, None, f"Invalid shape_and_slice spec {spec!r}: "
                                          "expected 'dim0 dim1 ... start,length:...'") from None
    if len(extents) != len(full_shape):
        raise errors.InvalidArgumentError(None, None, f"Invalid shape_and_slice spec {spec!r}: "
                                          f"{len(extents)} extents for a rank-{len(full_shape)} shape")
    return full_shape, extents


def _index_of(extents, full_shape):
    return tuple(slice(s, s + (n if n >= 0 else full - s)) for (s, n), full in zip(extents, full_shape))


# -- encoding --------------------------------------------------------------------------------
def _encode(arr: np.ndarray, dtype: str) -> tuple[list, int]:
    """(chunks, masked crc32c) of a tensor's bytes in the data file."""
    if dtype != "string":
        npd = np.dtype(dtypes.as_dtype(dtype).as_numpy_dtype).newbyteorder("<")
        buf = np.ascontiguousarray(arr, dtype=npd).tobytes()
        return [buf], crc32c.mask(crc32c.crc32c(buf))
    items = [v if isinstance(v, bytes) else str(v).encode() for v in np.asarray(arr, dtype=object).reshape(-1)]
    lengths = b"".join(encode_varint(len(b)) for b in items)
    crc = crc32c.extend(0, b"".join(struct.pack("<I", len(b)) for b in items))
    length_crc = struct.pack("<I", crc32c.mask(crc))
    crc = crc32c.extend(crc, length_crc)
    for b in items:
        crc = crc32c.extend(crc, b)
    return [lengths, length_crc, *items], crc32c.mask(crc)


def _string_lengths(buf: bytes, n: int) -> tuple[list, int]:
    lengths, pos = [], 0
    for _ in range(n):
        length, pos = decode_varint(buf, pos)
        lengths.append(length)
    return lengths, pos


def _checksum(buf: bytes, dtype: str, shape) -> int:
    """The masked CRC-32C TF stores for a tensor's bytes (see the module docstring)."""
    if dtype != "string":
        return crc32c.mask(crc32c.crc32c(buf))
    try:
        lengths, pos = _string_lengths(buf, int(np.prod(shape, dtype=np.int64)))
    except DecodeError:
        return -1
    crc = crc32c.extend(0, b"".join(struct.pack("<I", n & 0xFFFFFFFF) for n in lengths))
    return crc32c.mask(crc32c.extend(crc, buf[pos:]))


def _decode(buf: bytes, dtype: str, shape, where: str) -> np.ndarray:
    n = int(np.prod(shape, dtype=np.int64))
    if dtype != "string":
        npd = np.dtype(dtypes.as_dtype(dtype).as_numpy_dtype)
        if len(buf) != n * npd.itemsize:
            raise errors.DataLossError(None, None, f"{where}: {len(buf)} bytes for {n} x {dtype}")
        return np.frombuffer(buf, dtype=npd.newbyteorder("<")).astype(npd).reshape(shape)
    try:
        lengths, pos = _string_lengths(buf, n)
    except DecodeError:
        raise errors.DataLossError(None, None, f"{where}: truncated string lengths") from None
    pos += 4  # the lengths' checksum, covered by the entry's CRC checked already
    out = np.empty(n, dtype=object)
    for i, length in enumerate(lengths):
        out[i] = bytes(buf[pos:pos + length])
        pos += length
    return out.reshape(shape)


# -- writing ----------------------------------------------------------------------------------
def _entry(dtype: str, shape, shard: int, offset: int, size: int, crc: int) -> BundleEntryProto:
    e = BundleEntryProto(dtype=datatype_enum(dtype), shard_id=shard, offset=offset, size=size,
                         crc32c=crc)
    for d in shape:
        e.shape.dim.add(size=int(d))
    return e


def header(num_shards: int) -> bytes:
    return BundleHeaderProto(num_shards=num_shards,
                             version=_VersionDef(producer=BUNDLE_VERSION)).SerializeToString()


def layout(names, arrays, slice_specs=None):
    """Lays tensors out as one shard: (data chunks, {index key: BundleEntryProto}).

    With a slice spec ('full shape' 'extents'), the array is that slice of the named tensor:
    it gets a slice key, and the name's own entry lists the slice (as TF's BundleWriter)."""
    chunks, entries, offset = [], {}, 0
    for i, (name, arr) in enumerate(zip(names, arrays)):
        arr = np.asarray(arr)
        dtype = dtypes.as_dtype(arr.dtype).name
        spec = slice_specs[i] if slice_specs else ""
        parts, crc = _encode(arr, dtype)
        size = sum(len(p) for p in parts)
        entry = _entry(dtype, arr.shape, 0, offset, size, crc)
        chunks.extend(parts)
        offset += size
        if not spec:
            if name.encode() in entries:
                raise errors.InvalidArgumentError(None, None, f"Duplicate tensor name {name!r} in a save")
            entries[name.encode()] = entry
            continue
        full_shape, extents = parse_slice_spec(spec)
        entries[slice_key(name, extents)] = entry
        full = entries.setdefault(name.encode(), _entry(dtype, full_shape, 0, 0, 0, 0))
        proto = full.slices.add()
        for start, length in extents:
            ext = proto.extent.add(start=start)
            if length >= 0:
                ext.length = length
    return chunks, entries


def index_bytes(entries: dict, num_shards: int) -> bytes:
    items = [(b"", header(num_shards))]
    items += [(k, entries[k].SerializeToString()) for k in sorted(entries)]
    return sstable.build(items)


def merged_index(shard_entries: list) -> bytes:
    """One index over shards: shard i's entries get shard_id i (MergeV2Checkpoints)."""
    merged = {}
    for shard, entries in enumerate(shard_entries):
        for key, entry in entries.items():
            if key in merged:
                # A partitioned variable's shards saved on several devices: each shard's
                # index lists its own slices of the full tensor; the merged entry lists all.
                have = merged[key]
                if not (entry.slices and have.slices):
                    raise errors.InvalidArgumentError(None, None, f"Duplicate tensor {key!r} in shards")
                if have.dtype != entry.dtype or have.shape.SerializeToString() != entry.shape.SerializeToString():
                    raise errors.InvalidArgumentError(
                        None, None, f"Shards disagree on the dtype or full shape of sliced tensor {key!r}")
                for proto in entry.slices:
                    have.slices.add().CopyFrom(proto)
                continue
            if not entry.slices:
                entry.shard_id = shard
            merged[key] = entry
    return index_bytes(merged, len(shard_entries))


# -- reading ---------------------------------------------------------------------------------
class BundleReader:
    """The tensors of one V2 checkpoint, read on demand with their CRCs checked."""

    def __init__(self, prefix: str, table: dict):
        self._prefix = prefix
        path = index_path(prefix)
        try:
            self.header = BundleHeaderProto.FromString(table.get(b"", b""))
            self.entries = {}
            for key, value in table.items():
                if key and key[0] != 0:  # keys starting \x00 are slices, reached via their tensor
                    self.entries[key.decode("utf-8")] = BundleEntryProto.FromString(value)
            self._slices = {k: BundleEntryProto.FromString(v) for k, v in table.items()
                            if k and k[0] == 0}
        except (DecodeError, UnicodeDecodeError) as e:
            raise errors.DataLossError(None, None, f"Unable to read checkpoint index {path}: {e}") from None
        if self.header.endianness != 0:
            raise errors.UnimplementedError(None, None, f"{path}: big-endian checkpoints are not supported")

    def names(self):
        return list(self.entries)

    def data_files(self):
        n = max(self.header.num_shards, 1)
        return [data_path(self._prefix, i, n) for i in range(n)]

    def dtype_name(self, name) -> str:
        try:
            return datatype_name(self._entry(name).dtype)
        except ValueError as e:
            raise errors.UnimplementedError(None, None, f"Checkpoint tensor {name}: {e}") from None

    def shape(self, name) -> list:
        return [d.size for d in self._entry(name).shape.dim]

    def _entry(self, name) -> BundleEntryProto:
        entry = self.entries.get(name)
        if entry is None:
            raise errors.NotFoundError(None, None, f"Key {name} not found in checkpoint")
        return entry

    def read(self, name) -> np.ndarray:
        entry = self._entry(name)
        if not entry.slices:
            return self._read_entry(name, entry)
        shape = self.shape(name)
        out = np.empty(shape, dtype=dtypes.as_dtype(self.dtype_name(name)).as_numpy_dtype)
        for proto in entry.slices:
            extents = [(e.start, e.length if e.HasField("length") else -1) for e in proto.extent]
            key = slice_key(name, extents)
            part = self._slices.get(key)
            if part is None:
                raise errors.DataLossError(None, None, f"Slice {extents} of {name} is missing from "
                                           f"{index_path(self._prefix)}")
            out[_index_of(extents, shape)] = self._read_entry(name, part)
        return out

    def read_slice(self, name, spec: str) -> np.ndarray:
        """The part of tensor ``name`` that a RestoreV2 shape_and_slice spec names. Of a
        sliced tensor only the stored slices that overlap it are read: each shard of a
        partitioned variable restores from its own part of the checkpoint."""
        full_shape, extents = parse_slice_spec(spec)
        entry, shape = self._entry(name), self.shape(name)
        if shape != full_shape:
            raise errors.InvalidArgumentError(
                None, None, f"tensor_name = {name}; shape in shape_and_slice spec {full_shape} does "
                f"not match the shape stored in checkpoint: {shape}")
        want = _index_of(extents, full_shape)
        if not entry.slices or 0 in shape:
            return self.read(name)[want]
        out = np.empty([w.stop - w.start for w in want],
                       dtype=dtypes.as_dtype(self.dtype_name(name)).as_numpy_dtype)
        copied = 0
        for proto in entry.slices:
            have_extents = [(e.start, e.length if e.HasField("length") else -1) for e in proto.extent]
            have = _index_of(have_extents, shape)
            common = [slice(max(w.start, h.start), min(w.stop, h.stop)) for w, h in zip(want, have)]
            if any(c.start >= c.stop for c in common):
                continue
            part = self._slices.get(slice_key(name, have_extents))
            if part is None:
                raise errors.DataLossError(None, None, f"Slice {have_extents} of {name} is missing from "
                                           f"{index_path(self._prefix)}")
            value = self._read_entry(name, part)
            out[tuple(slice(c.start - w.start, c.stop - w.start) for c, w in zip(common, want))] = \
                value[tuple(slice(c.start - h.start, c.stop - h.start) for c, h in zip(common, have))]
            copied += int(np.prod([c.stop - c.start for c in common]))
        if copied != out.size:  # stored slices never overlap: fewer elements means a gap
            raise errors.NotFoundError(None, None, f"Can not find the slice {spec!r} of {name} in "
                                       f"{index_path(self._prefix)}: its slices do not cover it")
        return out

    def _read_entry(self, name, entry) -> np.ndarray:
        num_shards = max(self.header.num_shards, 1)
        path = data_path(self._prefix, entry.shard_id, num_shards)
        try:
            with open(path, "rb") as f:
                f.seek(entry.offset)
                buf = f.read(entry.size)
        except FileNotFoundError:
            raise errors.NotFoundError(None, None, f"Checkpoint data file {path} not found") from None
        dtype, shape = self.dtype_name(name), [d.size for d in entry.shape.dim]
        if len(buf) != entry.size or _checksum(buf, dtype, shape) != entry.crc32c:
            raise errors.DataLossError(
                None, None, f"Checksum does not match for key {name} in {path}: the checkpoint "
                "data is truncated or corrupted")
        return _decode(buf, dtype, shape, f"{path} key {name}")


def shard_entries(table: dict) -> dict:
    """{index key: BundleEntryProto} of a single-shard bundle (for merging)."""
    return {k: BundleEntryProto.FromString(v) for k, v in table.items() if k}
