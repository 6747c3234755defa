"""The compiled CRC-32C loops of dtf/framework/crc32c.py, in their own module so that
importing that one does not import Numba. Module-level functions (not closures) so that
Numba's on-disk cache finds them again in the next process."""
from __future__ import annotations

import numpy as np
from numba import njit

_MASK_DELTA = 0xA282EAD8


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


@njit(cache=True, nogil=True)
def _masked(data, t):
    crc = loop(np.uint32(0xFFFFFFFF), data, t) ^ np.uint32(0xFFFFFFFF)
    return ((((crc >> 15) | (crc << 17)) & np.uint32(0xFFFFFFFF)) + np.uint32(_MASK_DELTA)) \
        & np.uint32(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _u32(data, i):
    return (np.uint32(data[i]) | (np.uint32(data[i + 1]) << 8)
            | (np.uint32(data[i + 2]) << 16) | (np.uint32(data[i + 3]) << 24))


@njit(cache=True, nogil=True)
def frame(data, t, starts, lengths):
    """TFRecord frames (uint64 length, masked CRC of it, data, masked CRC of the data)
    complete at the front of ``data``, both CRCs checked: (records found, offset after
    them, 1 if the frame at that offset is corrupted else 0); each record's offset and
    length go to ``starts`` and ``lengths`` (at most their size)."""
    n = data.size
    pos = 0
    k = 0
    while k < starts.size and pos + 12 <= n:
        length = np.int64(_u32(data, pos)) | (np.int64(_u32(data, pos + 4)) << 32)
        if _masked(data[pos:pos + 8], t) != _u32(data, pos + 8):
            return k, pos, 1
        if length > n - pos - 16:
            break
        if _masked(data[pos + 12:pos + 12 + length], t) != _u32(data, pos + 12 + length):
            return k, pos, 1
        starts[k] = pos + 12
        lengths[k] = length
        k += 1
        pos += 16 + length
    return k, pos, 0
