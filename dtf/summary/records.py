"""TFRecord framing, the container format of event files.

Each record is ``uint64 length | uint32 masked_crc32c(length) | data |
uint32 masked_crc32c(data)``, little-endian. CRC-32C (Castagnoli) comes from
dtf/framework/crc32c.py (compiled for long records, Python for short ones).
"""
from __future__ import annotations

import struct

from dtf.framework import errors
import numpy as np

from dtf.framework.crc32c import crc32c, frame_records, load_compiled, masked_crc32c  # noqa: F401 - crc32c re-exported

_CHUNK = 1 << 20  # bytes read at a time: records are framed and checked a chunk at a time
_FRAMES = 4096  # records framed per compiled call


def encode_record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (header + struct.pack("<I", masked_crc32c(header)) + data
            + struct.pack("<I", masked_crc32c(data)))


def read_records(path: str):
    """Yields each record's data; DataLossError on a bad CRC or a cut-off record."""
    with open(path, "rb") as f:
        yield from iter_records(f)


def iter_records(f):
    """Yields each record's data from the binary file object ``f``.

    The file is read a chunk at a time and each chunk's frames are found and both CRCs
    checked in one compiled pass: reading record by record (two reads, two CRC calls, each
    a few microseconds) was most of a TFRecordReader's time per record. Errors come at the
    record they concern, after the good records before it."""
    offset = 0  # file offset of buf[0]
    buf = b""
    starts = np.empty(_FRAMES, np.int64)
    lengths = np.empty(_FRAMES, np.int64)
    while True:
        need = _CHUNK
        if len(buf) >= 12:  # a record larger than a chunk (its header is checked): the rest at once
            need = max(need, 16 + struct.unpack_from("<Q", buf)[0] - len(buf))
        more = f.read(need)
        if more:
            buf = buf + more if buf else more
        elif not buf:
            return
        while True:
            count, end, corrupted = frame_records(np.frombuffer(buf, np.uint8), starts, lengths)
            for s, n in zip(starts[:count].tolist(), lengths[:count].tolist()):
                yield buf[s:s + n]
            if corrupted:
                raise errors.DataLossError(None, None, f"corrupted record at {offset + end}")
            if end:
                buf = buf[end:]
                offset += end
            if count < _FRAMES:
                break
        if not more:
            if buf:
                raise errors.DataLossError(None, None, f"truncated record at {offset}")
            return
