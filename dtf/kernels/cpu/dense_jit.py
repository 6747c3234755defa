"""The Numba loops behind the bias gradient and Mean over pixels (sums over a run of axes),
sums, maxima and minima of short rows, UnsortedSegmentSum, Select and the gradient-descent
update.
Imported only when a plan first needs one, so ``import dtf`` never loads the compiler.

On the small tensors of a training step numpy's fixed cost per call dominates: a column
sum of a 64x128 float32 batch takes ~5.5 us in np.add.reduce and ~2.8 us here, and
``var - alpha * delta`` (a temporary and two passes) ~5.7 us against ~2.5 us. Both loops
add in numpy's order, so results are bit-identical to numpy's.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_JIT = dict(cache=True, nogil=True)


@njit(**_JIT)
def _sum_middle(x):
    """x.sum(axis=1) of a C-contiguous [a, n, m] array, adding its rows in order as numpy
    does (bit for bit)."""
    a, n, m = x.shape
    out = np.zeros((a, m), x.dtype)
    for i in range(a):
        for k in range(n):
            for j in range(m):
                out[i, j] += x[i, k, j]
    return out


@njit(**_JIT)
def _row_sums(x, zero, out, r0, r1):
    """out[i] = the sum of row i of the C-contiguous [rows, n] x (n <= 128) for rows r0 to
    r1, in numpy's order for a contiguous row (eight running sums, combined pairwise, then
    the rest; rows under 8 in order), started from ``zero`` as numpy's reduction starts
    from its identity: bit for bit np.add.reduce(x, axis=1)."""
    n = x.shape[1]
    for i in range(r0, r1):
        row = x[i]
        if n < 8:
            res = zero
            for k in range(n):
                res += row[k]
        else:
            s0, s1, s2, s3 = row[0], row[1], row[2], row[3]
            s4, s5, s6, s7 = row[4], row[5], row[6], row[7]
            k = 8
            end = n - n % 8
            while k < end:
                s0 += row[k]
                s1 += row[k + 1]
                s2 += row[k + 2]
                s3 += row[k + 3]
                s4 += row[k + 4]
                s5 += row[k + 5]
                s6 += row[k + 6]
                s7 += row[k + 7]
                k += 8
            res = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
            while k < n:
                res += row[k]
                k += 1
        out[i] = zero + res


@njit(**_JIT)
def _better(v, m, largest):
    return v if (v > m if largest else v < m) else m


@njit(**_JIT)
def _row_extremes(x, largest, out, r0, r1):
    """out[i] = the maximum (``largest``) or minimum of row i of the C-contiguous
    [rows, n] x (n >= 1) for rows r0 to r1; NaN wherever the row has one, as np.maximum
    and np.minimum give. Eight running extremes, as _row_sums keeps sums, and the NaN test
    kept apart from the comparisons: a chain of selects through one value does not
    vectorize (1.0 ms on 32768 rows of 64 against 0.63 on one core)."""
    n = x.shape[1]
    for i in range(r0, r1):
        row = x[i]
        m = row[0]
        nan = False
        k = 0
        if n >= 8:
            m0, m1, m2, m3 = row[0], row[1], row[2], row[3]
            m4, m5, m6, m7 = row[4], row[5], row[6], row[7]
            end = n - n % 8
            k = 8
            while k < end:
                m0 = _better(row[k], m0, largest)
                m1 = _better(row[k + 1], m1, largest)
                m2 = _better(row[k + 2], m2, largest)
                m3 = _better(row[k + 3], m3, largest)
                m4 = _better(row[k + 4], m4, largest)
                m5 = _better(row[k + 5], m5, largest)
                m6 = _better(row[k + 6], m6, largest)
                m7 = _better(row[k + 7], m7, largest)
                k += 8
            m = _better(_better(_better(m1, m0, largest), _better(m3, m2, largest), largest),
                        _better(_better(m5, m4, largest), _better(m7, m6, largest), largest),
                        largest)
        for j in range(k, n):
            m = _better(row[j], m, largest)
        for j in range(n):
            nan |= row[j] != row[j]
        out[i] = np.nan if nan else m


@njit(**_JIT)
def _sub_scaled_into(v, alpha, d, o):
    """o = v - alpha * d over flat arrays, alpha a scalar of their dtype."""
    for i in range(v.size):
        o[i] = v[i] - alpha * d[i]


@njit(**_JIT)
def _sub_scaled_in_place(v, alpha, d):
    """v = v - alpha * d over flat arrays, in place: _sub_scaled_into handed v as its
    output fails LLVM's overlap check and runs unvectorized."""
    for i in range(v.size):
        v[i] = v[i] - alpha * d[i]


@njit(**_JIT)
def _segment_sum_rows(rows, ids, out):
    """out[ids[i]] += rows[i] for each row i in order (np.add.at's order, so the same
    sums), skipping negative ids as TF does; ids already checked against out's rows."""
    for i in range(rows.shape[0]):
        s = ids[i]
        if s >= 0:
            o = out[s]
            r = rows[i]
            for k in range(rows.shape[1]):
                o[k] += r[k]


@njit(**_JIT)
def _select_into(c, x, y, out):
    """out[i] = x[i] if c[i] else y[i] over 1-D arrays of one length: a blend LLVM
    vectorizes, where np.where branches per element. (Indexing from an offset instead,
    range(s0, s1), kept it scalar: 10.7 ms against 0.9 on 2M float32.)"""
    for i in range(out.size):
        out[i] = x[i] if c[i] else y[i]
