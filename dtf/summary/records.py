"""TFRecord framing, the container format of event files.

Each record is ``uint64 length | uint32 masked_crc32c(length) | data |
uint32 masked_crc32c(data)``, little-endian. CRC-32C (Castagnoli) comes from
dtf/framework/crc32c.py (compiled for long records, Python for short ones).
"""
from __future__ import annotations

import struct

from dtf.framework import errors
from dtf.framework.crc32c import crc32c, load_compiled, masked_crc32c  # noqa: F401 - crc32c re-exported


def encode_record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


def _read_exact(f, n: int, offset: int, allow_eof: bool) -> bytes | None:
    chunk = f.read(n)
    if len(chunk) == n:
        return chunk
    if allow_eof and not chunk:
        return None
    raise errors.DataLossError(None, None, f"truncated record at {offset}")


def _check(data: bytes, stored: bytes, offset: int):
    if struct.unpack("<I", stored)[0] != masked_crc32c(data):
        raise errors.DataLossError(None, None, f"corrupted record at {offset}")


def read_records(path: str):
    """Yields each record's data; DataLossError on a bad CRC or a cut-off record."""
    with open(path, "rb") as f:
        yield from iter_records(f)


def iter_records(f):
    """Yields each record's data from the binary file object ``f``."""
    load_compiled()
    offset = 0
    while True:
        header = _read_exact(f, 12, offset, allow_eof=True)
        if header is None:
            return
        _check(header[:8], header[8:], offset)
        (length,) = struct.unpack("<Q", header[:8])
        body = _read_exact(f, length + 4, offset, allow_eof=False)
        _check(body[:length], body[length:], offset)
        yield body[:length]
        offset += 12 + length + 4
