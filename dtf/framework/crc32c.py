"""CRC-32C (Castagnoli), as TF's file formats store it (TFRecords, checkpoint bundles).

Small buffers (event records, index blocks) go through a table loop in plain Python. Large
ones (checkpoint tensors) through the same loop compiled by Numba: the Python loop does
about 10 MB/s, which would make a 100 MB checkpoint take ten seconds; Numba is imported
only the first time a buffer is that large.
"""
from __future__ import annotations

import numpy as np

_POLY = 0x82F63B78  # CRC-32C, reflected
_MASK_DELTA = 0xA282EAD8
_NUMBA_FROM = 1 << 16  # bytes; below this the Python loop is quicker than loading Numba


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


def _python_extend(crc: int, data) -> int:
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def _numba_extend():
    global _jit_extend
    if _jit_extend is None:
        from numba import njit

        @njit(cache=True, nogil=True)
        def loop(crc, data, table):
            for i in range(data.size):
                crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8)
            return crc

        table = np.asarray(_TABLE, dtype=np.uint32)
        _jit_extend = lambda crc, data: int(loop(np.uint32(crc), data, table))  # noqa: E731
    return _jit_extend


def extend(crc: int, data) -> int:
    """The CRC-32C of the bytes so far (``crc``, 0 at the start) followed by ``data``."""
    crc ^= 0xFFFFFFFF
    if len(data) >= _NUMBA_FROM:
        crc = _numba_extend()(crc, np.frombuffer(data, dtype=np.uint8))
    else:
        crc = _python_extend(crc, data)
    return crc ^ 0xFFFFFFFF


def crc32c(data) -> int:
    return extend(0, data)


def mask(crc: int) -> int:
    """TF masks stored CRCs so that a CRC of data containing CRCs stays well distributed."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data) -> int:
    return mask(crc32c(data))
