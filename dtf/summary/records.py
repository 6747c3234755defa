"""TFRecord framing, the container format of event files.

Each record is ``uint64 length | uint32 masked_crc32c(length) | data |
uint32 masked_crc32c(data)``, little-endian. CRC-32C (Castagnoli) is computed with a
lookup table in pure Python: records here are small summaries, so speed is not an issue
and no native dependency is needed.
"""
from __future__ import annotations

import struct

from dtf.framework import errors

_POLY = 0x82F63B78  # CRC-32C, reflected
_MASK_DELTA = 0xA282EAD8


def _make_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TF masks stored CRCs so that a CRC of data containing CRCs stays well distributed."""
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


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
