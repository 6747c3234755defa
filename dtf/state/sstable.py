"""The immutable sorted table (LevelDB's SSTable, as TF's tensorflow/core/lib/io/table*
writes it) that holds a checkpoint bundle's ``.index``.

A table is data blocks, an empty meta-index block, an index block and a 48-byte footer::

    block   = entries | uint32 restart offsets... | uint32 number of restarts
    entry   = varint shared | varint unshared | varint value length | key suffix | value
    trailer = 1 byte compression type (0: none) | uint32 masked crc32c(block + type)
    footer  = BlockHandle metaindex | BlockHandle index | zero padding to 40 bytes |
              fixed64 magic 0xdb4775248b80fb57
    BlockHandle = varint64 offset | varint64 size

Keys share prefixes with the previous key except at restart points (every 16 entries in
data blocks, every entry in the index block). The index block maps a separator key (>= the
last key of a block, < the first of the next) to the block's handle. Writing matches TF's
table builder; reading accepts any uncompressed table and raises DataLossError on a bad
magic number, a checksum mismatch or a truncated block.
"""
from __future__ import annotations

import struct

from dtf.framework import crc32c, errors
from dtf.framework.protowire import DecodeError, decode_varint, encode_varint

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_SIZE = 262144  # TF's table::Options default
RESTART_INTERVAL = 16


class _BlockBuilder:
    def __init__(self, restart_interval: int):
        self._interval = restart_interval
        self._buf = bytearray()
        self._restarts = [0]
        self._count = 0
        self._last = b""

    def add(self, key: bytes, value: bytes):
        shared = 0
        if self._count < self._interval:
            limit = min(len(key), len(self._last))
            while shared < limit and key[shared] == self._last[shared]:
                shared += 1
        else:
            self._restarts.append(len(self._buf))
            self._count = 0
        self._buf += encode_varint(shared) + encode_varint(len(key) - shared)
        self._buf += encode_varint(len(value)) + key[shared:] + value
        self._last = key
        self._count += 1

    def size(self) -> int:
        return len(self._buf) + 4 * len(self._restarts) + 4

    def empty(self) -> bool:
        return not self._buf

    def finish(self) -> bytes:
        return bytes(self._buf) + struct.pack(f"<{len(self._restarts) + 1}I", *self._restarts,
                                              len(self._restarts))


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    n = min(len(start), len(limit))
    i = 0
    while i < n and start[i] == limit[i]:
        i += 1
    if i < n and start[i] < 0xFF and start[i] + 1 < limit[i]:
        return start[:i] + bytes([start[i] + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    for i, b in enumerate(key):
        if b != 0xFF:
            return key[:i] + bytes([b + 1])
    return key


def _handle(offset: int, size: int) -> bytes:
    return encode_varint(offset) + encode_varint(size)


def build(items) -> bytes:
    """The table of ``items``: (key bytes, value bytes) pairs in strictly increasing key order."""
    out = bytearray()
    index = _BlockBuilder(1)
    block = _BlockBuilder(RESTART_INTERVAL)
    last_key, pending = None, None  # pending: handle of a finished block awaiting its index key

    def write_block(contents: bytes):
        offset = len(out)
        out.extend(contents)
        out.extend(b"\x00" + struct.pack("<I", crc32c.mask(crc32c.crc32c(contents + b"\x00"))))
        return _handle(offset, len(contents))

    for key, value in items:
        if last_key is not None and key <= last_key:
            raise ValueError(f"sstable keys must increase: {key!r} after {last_key!r}")
        if pending is not None:
            index.add(_shortest_separator(last_key, key), pending)
            pending = None
        block.add(key, value)
        last_key = key
        if block.size() >= BLOCK_SIZE:
            pending = write_block(block.finish())
            block = _BlockBuilder(RESTART_INTERVAL)
    if not block.empty():
        pending = write_block(block.finish())
    if pending is not None:
        index.add(_short_successor(last_key), pending)
    metaindex = write_block(_BlockBuilder(RESTART_INTERVAL).finish())
    index_handle = write_block(index.finish())
    footer = (metaindex + index_handle).ljust(FOOTER_SIZE - 8, b"\x00")
    out.extend(footer + struct.pack("<Q", MAGIC))
    return bytes(out)


# -- reading ---------------------------------------------------------------------------
def _corrupt(path: str, why: str):
    return errors.DataLossError(None, None, f"Unable to read checkpoint index {path}: {why}")


def _decode_handle(data: bytes, pos: int) -> tuple[int, int, int]:
    offset, pos = decode_varint(data, pos)
    size, pos = decode_varint(data, pos)
    return offset, size, pos


def _entries(block: bytes, path: str):
    if len(block) < 4:
        raise _corrupt(path, "block too short")
    (num_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * num_restarts
    if end < 0:
        raise _corrupt(path, "bad restart array")
    pos, key = 0, b""
    while pos < end:
        shared, pos = decode_varint(block, pos)
        unshared, pos = decode_varint(block, pos)
        vlen, pos = decode_varint(block, pos)
        if shared > len(key) or pos + unshared + vlen > end:
            raise _corrupt(path, "bad block entry")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + vlen]
        pos += vlen


def parse(data: bytes, path: str = "<table>") -> dict:
    """{key: value} of a whole table (checkpoint indexes are small: one entry per tensor)."""
    if len(data) < FOOTER_SIZE:
        raise _corrupt(path, "file too short to be an sstable")
    (magic,) = struct.unpack_from("<Q", data, len(data) - 8)
    if magic != MAGIC:
        raise _corrupt(path, "not an sstable (bad magic number)")
    try:
        _, _, pos = _decode_handle(data, len(data) - FOOTER_SIZE)  # the (empty) metaindex
        offset, size, _ = _decode_handle(data, pos)
        table = {}
        for _, handle in _entries(_read_block(data, offset, size, path), path):
            offset, size, _ = _decode_handle(handle, 0)
            for key, value in _entries(_read_block(data, offset, size, path), path):
                table[key] = value
        return table
    except DecodeError as e:
        raise _corrupt(path, str(e)) from None


def _read_block(data: bytes, offset: int, size: int, path: str) -> bytes:
    end = offset + size
    if end + 5 > len(data):
        raise _corrupt(path, f"block at {offset} runs past the end of the file (truncated?)")
    (stored,) = struct.unpack_from("<I", data, end + 1)
    if crc32c.mask(crc32c.crc32c(data[offset:end + 1])) != stored:
        raise _corrupt(path, f"block checksum mismatch at offset {offset}")
    if data[end] != 0:
        raise _corrupt(path, f"block at {offset} is compressed (type {data[end]}); dtf reads "
                       "uncompressed tables only, as TF's checkpoint writer makes them")
    return data[offset:end]
