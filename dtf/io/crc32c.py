"""CRC-32C (Castagnoli), the checksum of TFRecord framing.

Reading records checks two CRCs per record, so the record path wants a compiled loop:
a Numba kernel (cached on disk, compiled on first use) over a lookup table, about a
byte per nanosecond where the pure-Python loop takes ~60 ns a byte. Short inputs (a
record's 8-byte length) stay in Python, where the call into Numba would cost more.
"""
from __future__ import annotations

import threading

import numpy as np

_POLY = 0x82F63B78  # CRC-32C, reflected
_SHORT = 32  # bytes under which the Python loop wins


def _make_table():
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


TABLE = _make_table()
_np_table = np.array(TABLE, dtype=np.uint32)
_compiled = None
_lock = threading.Lock()


def _python_crc(data) -> int:
    crc = 0xFFFFFFFF
    table = TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _compile():
    global _compiled
    with _lock:
        if _compiled is None:
            try:
                from ._crc_jit import crc_loop
            except ImportError:  # numba is a dependency; stay correct without it anyway
                _compiled = False
                return
            _compiled = crc_loop


def crc32c(data) -> int:
    """The CRC-32C of ``data`` (bytes-like)."""
    if len(data) < _SHORT:
        return _python_crc(data)
    if _compiled is None:
        _compile()
    if _compiled is False:
        return _python_crc(data)
    return int(_compiled(np.frombuffer(data, dtype=np.uint8), _np_table))
