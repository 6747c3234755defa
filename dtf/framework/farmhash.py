"""FarmHash's Fingerprint64 (farmhashna::Hash64) and TF's FingerprintCat64, in plain Python.

TF hashes strings into buckets with these (StringToHashBucketFast, SparseCross,
categorical_column_with_hash_bucket, crossed_column); a model trained by TF and one trained
by dtf put the same string into the same bucket only if these match bit for bit, so the
goldens check them against TF's own ``tf.fingerprint`` and ``to_hash_bucket_fast``. All
arithmetic is mod 2**64 (the C++ code uses uint64)."""
from __future__ import annotations

import struct

_M = (1 << 64) - 1
K0 = 0xC3A5C85C97CB3127
K1 = 0xB492B66FBE98F273
K2 = 0x9AE16A3B2F90404F
_CAT_MUL = 0xC6A4A7935BD1E995


def _f64(s, i):
    return struct.unpack_from("<Q", s, i)[0]


def _f32(s, i):
    return struct.unpack_from("<I", s, i)[0]


def _rot(v, shift):
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M


def _shift_mix(v):
    return v ^ (v >> 47)


def _hash_len16(u, v, mul):
    a = ((u ^ v) * mul) & _M
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M
    b ^= b >> 47
    return (b * mul) & _M


def _len0to16(s, n):
    if n >= 8:
        mul = K2 + n * 2
        a = (_f64(s, 0) + K2) & _M
        b = _f64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M
        d = ((_rot(a, 25) + b) * mul) & _M
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        a = _f32(s, 0)
        return _hash_len16((n + (a << 3)) & _M, _f32(s, n - 4), mul)
    if n > 0:
        a, b, c = s[0], s[n >> 1], s[n - 1]
        y = (a + (b << 8)) & 0xFFFFFFFF
        z = (n + (c << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * K2) ^ (z * K0)) & _M) * K2) & _M
    return K2


def _len17to32(s, n):
    mul = K2 + n * 2
    a = (_f64(s, 0) * K1) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * K2) & _M
    return _hash_len16((_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M,
                       (a + _rot((b + K2) & _M, 18) + c) & _M, mul)


def _len33to64(s, n):
    mul = K2 + n * 2
    a = (_f64(s, 0) * K2) & _M
    b = _f64(s, 8)
    c = (_f64(s, n - 8) * mul) & _M
    d = (_f64(s, n - 16) * K2) & _M
    y = (_rot((a + b) & _M, 43) + _rot(c, 30) + d) & _M
    z = _hash_len16(y, (a + _rot((b + K2) & _M, 18) + c) & _M, mul)
    e = (_f64(s, 16) * mul) & _M
    f = _f64(s, 24)
    g = ((y + _f64(s, n - 32)) * mul) & _M
    h = ((z + _f64(s, n - 24)) * mul) & _M
    return _hash_len16((_rot((e + f) & _M, 43) + _rot(g, 30) + h) & _M,
                       (e + _rot((f + a) & _M, 18) + g) & _M, mul)


def _weak32(s, i, a, b):
    w, x, y, z = _f64(s, i), _f64(s, i + 8), _f64(s, i + 16), _f64(s, i + 24)
    a = (a + w) & _M
    b = _rot((b + a + z) & _M, 21)
    c = a
    a = (a + x + y) & _M
    b = (b + _rot(a, 44)) & _M
    return (a + z) & _M, (b + c) & _M


def fingerprint64(data: bytes) -> int:
    """farmhash::Fingerprint64 of ``data``, an unsigned 64-bit int."""
    s = bytes(data)
    n = len(s)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    y = (seed * K1 + 113) & _M
    z = (_shift_mix((y * K2 + 113) & _M) * K2) & _M
    v0 = v1 = w0 = w1 = 0
    x = (seed * K2 + _f64(s, 0)) & _M
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * K1) & _M
        y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * K1) & _M
        x ^= w1
        y = (y + v0 + _f64(s, i + 40)) & _M
        z = (_rot((z + w0) & _M, 33) * K1) & _M
        v0, v1 = _weak32(s, i, (v1 * K1) & _M, (x + w0) & _M)
        w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w0 + ((n - 1) & 63)) & _M
    v0 = (v0 + w0) & _M
    w0 = (w0 + v0) & _M
    x = (_rot((x + y + v0 + _f64(s, i + 8)) & _M, 37) * mul) & _M
    y = (_rot((y + v1 + _f64(s, i + 48)) & _M, 42) * mul) & _M
    x ^= (w1 * 9) & _M
    y = (y + v0 * 9 + _f64(s, i + 40)) & _M
    z = (_rot((z + w0) & _M, 33) * mul) & _M
    v0, v1 = _weak32(s, i, (v1 * mul) & _M, (x + w0) & _M)
    w0, w1 = _weak32(s, i + 32, (z + w1) & _M, (y + _f64(s, i + 16)) & _M)
    z, x = x, z
    return _hash_len16((_hash_len16(v0, w0, mul) + _shift_mix(y) * K0 + z) & _M,
                       (_hash_len16(v1, w1, mul) + x) & _M, mul)


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's FingerprintCat64: combines two fingerprints (SparseCross's hashed crosses)."""
    result = fp1 ^ _CAT_MUL
    result ^= (_shift_mix((fp2 * _CAT_MUL) & _M) * _CAT_MUL) & _M
    result = (result * _CAT_MUL) & _M
    result = (_shift_mix(result) * _CAT_MUL) & _M
    return _shift_mix(result)


def to_bucket(data: bytes, num_buckets: int) -> int:
    """StringToHashBucketFast: Fingerprint64 mod ``num_buckets``."""
    return fingerprint64(data) % num_buckets
