"""CRC-32C (Castagnoli), as TF's file formats store it (TFRecords, checkpoint bundles).

Small buffers (event records, index blocks) go through a table loop in plain Python. Large
ones (checkpoint tensors) through a slicing-by-8 loop compiled by Numba. Measured here on
25 MB: the Python loop ~10 MB/s (a 100 MB checkpoint would take ten seconds), Numba's
byte-at-a-time loop ~150 MB/s, slicing-by-8 ~1.5 GB/s. Numba is imported only the first
time a buffer is that large.
"""
from __future__ import annotations

import sys

import numpy as np

_POLY = 0x82F63B78  # CRC-32C, reflected
_MASK_DELTA = 0xA282EAD8
_NUMBA_FROM = 1 << 16  # bytes; below this the Python loop is quicker than loading Numba
_COMPILED_FROM = 32  # bytes; below this the call into Numba costs more than the Python loop


def _make_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()
_jit_extend = None
_jit_frame = None


def _python_extend(crc: int, data) -> int:
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def _slicing_tables() -> np.ndarray:
    """Slicing-by-8: tables[k][b] is the CRC of byte b followed by k zero bytes."""
    tables = np.zeros((8, 256), dtype=np.uint32)
    tables[0] = _TABLE
    for k in range(1, 8):
        prev = tables[k - 1]
        tables[k] = (prev >> 8) ^ tables[0][prev & 0xFF]
    return tables


def _numba_extend():
    global _jit_extend
    if _jit_extend is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def loop(crc, data, t):
            # Eight bytes per step through eight tables (~4x the byte-at-a-time loop).
            n = data.size
            i = 0
            while i + 8 <= n:
                crc ^= (np.uint32(data[i]) | (np.uint32(data[i + 1]) << 8)
                        | (np.uint32(data[i + 2]) << 16) | (np.uint32(data[i + 3]) << 24))
                crc = (t[7, crc & 0xFF] ^ t[6, (crc >> 8) & 0xFF] ^ t[5, (crc >> 16) & 0xFF]
                       ^ t[4, crc >> 24] ^ t[3, data[i + 4]] ^ t[2, data[i + 5]]
                       ^ t[1, data[i + 6]] ^ t[0, data[i + 7]])
                i += 8
            while i < n:
                crc = t[0, (crc ^ data[i]) & 0xFF] ^ (crc >> 8)
                i += 1
            return crc

        tables = _slicing_tables()
        _jit_extend = lambda crc, data: int(loop(np.uint32(crc), data, tables))  # noqa: E731
        _make_frame(loop, tables)
    return _jit_extend


def _make_frame(loop, tables):
    global _jit_frame
    from numba import njit

    @njit(cache=True, nogil=True)
    def masked(data, t):
        crc = loop(np.uint32(0xFFFFFFFF), data, t) ^ np.uint32(0xFFFFFFFF)
        return ((((crc >> 15) | (crc << 17)) & np.uint32(0xFFFFFFFF)) + np.uint32(_MASK_DELTA)) \
            & np.uint32(0xFFFFFFFF)

    @njit(cache=True, nogil=True)
    def u32(data, i):
        return (np.uint32(data[i]) | (np.uint32(data[i + 1]) << 8)
                | (np.uint32(data[i + 2]) << 16) | (np.uint32(data[i + 3]) << 24))

    @njit(cache=True, nogil=True)
    def frame(data, t, starts, lengths):
        # TFRecord frames (uint64 length, masked CRC of it, data, masked CRC of the data)
        # complete at the front of ``data``, both CRCs checked. Returns (records found,
        # offset after them, 1 if the frame at that offset is corrupted else 0).
        n = data.size
        pos = 0
        k = 0
        while k < starts.size and pos + 12 <= n:
            length = np.int64(u32(data, pos)) | (np.int64(u32(data, pos + 4)) << 32)
            if masked(data[pos:pos + 8], t) != u32(data, pos + 8):
                return k, pos, 1
            if length > n - pos - 16:
                break
            if masked(data[pos + 12:pos + 12 + length], t) != u32(data, pos + 12 + length):
                return k, pos, 1
            starts[k] = pos + 12
            lengths[k] = length
            k += 1
            pos += 16 + length
        return k, pos, 0

    _jit_frame = lambda data, starts, lengths: frame(data, tables, starts, lengths)  # noqa: E731


def frame_records(data, starts, lengths):
    """TFRecord frames at the front of the uint8 array ``data``, CRCs checked in one
    compiled pass: (count, end offset, corrupted) with each record's offset and length
    written to ``starts`` and ``lengths`` (at most their size)."""
    _numba_extend()
    return _jit_frame(data, starts, lengths)


def extend(crc: int, data) -> int:
    """The CRC-32C of the bytes so far (``crc``, 0 at the start) followed by ``data``."""
    crc ^= 0xFFFFFFFF
    n = len(data)
    # Once the compiled loop is there (record readers ask for it) or Numba is loaded anyway
    # (the kernels load it), it wins from a few dozen bytes on.
    if n >= _NUMBA_FROM or (n >= _COMPILED_FROM
                            and (_jit_extend is not None or "numba" in sys.modules)):
        crc = _numba_extend()(crc, np.frombuffer(data, dtype=np.uint8))
    else:
        crc = _python_extend(crc, data)
    return crc ^ 0xFFFFFFFF


def load_compiled():
    """Loads the compiled loop now: a reader that checks two CRCs per record (TFRecords)
    pays Numba's start once instead of the Python loop's ~60 ns a byte per record."""
    _numba_extend()


def crc32c(data) -> int:
    return extend(0, data)


def mask(crc: int) -> int:
    """TF masks stored CRCs so that a CRC of data containing CRCs stays well distributed."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data) -> int:
    return mask(crc32c(data))
