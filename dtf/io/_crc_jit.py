"""The compiled CRC-32C loop (imported only when first needed: it imports Numba)."""
import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def crc_loop(buf, table):
    crc = np.uint32(0xFFFFFFFF)
    for b in buf:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> np.uint32(8))
    return crc ^ np.uint32(0xFFFFFFFF)
