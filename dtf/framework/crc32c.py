"""CRC-32C (Castagnoli), as TF's file formats store it (TFRecords, checkpoint bundles).

Small buffers (event records, index blocks) go through a table loop in plain Python. Large
ones (checkpoint tensors) through a slicing-by-8 loop compiled by Numba. Measured here on
25 MB: the Python loop ~10 MB/s (a 100 MB checkpoint would take ten seconds), Numba's
byte-at-a-time loop ~150 MB/s, slicing-by-8 ~1.5 GB/s. Numba is imported only the first
time a buffer is that large or a TFRecord file is read (dtf/framework/crc32c_jit.py).
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
_jit_frame = None  # set with _jit_extend


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
    global _jit_extend, _jit_frame
    if _jit_extend is None:
        from dtf.framework import crc32c_jit  # imports Numba

        tables = _slicing_tables()
        loop, frame = crc32c_jit.loop, crc32c_jit.frame
        _jit_frame = lambda data, starts, lengths: frame(data, tables, starts, lengths)  # noqa: E731
        _jit_extend = lambda crc, data: int(loop(np.uint32(crc), data, tables))  # noqa: E731
    return _jit_extend


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
