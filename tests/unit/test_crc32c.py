"""CRC-32C: the known check value, and the compiled loop agreeing with the Python one on
lengths around its threshold and not a multiple of its 8-byte step."""
import os

from dtf.framework import crc32c


def test_check_value_and_masking():
    assert crc32c.crc32c(b"123456789") == 0xE3069283
    assert crc32c.mask(0) == 0xA282EAD8


def test_compiled_loop_matches_python_loop():
    for n in (crc32c._NUMBA_FROM - 1, crc32c._NUMBA_FROM, crc32c._NUMBA_FROM + 3,
              crc32c._NUMBA_FROM + 7, 3 * crc32c._NUMBA_FROM + 5):
        data = os.urandom(n)
        want = crc32c._python_extend(0xFFFFFFFF, data) ^ 0xFFFFFFFF
        assert crc32c.crc32c(data) == want, n
        assert crc32c.extend(crc32c.crc32c(data[:1000]), data[1000:]) == want, n
