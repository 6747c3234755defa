"""The Numba loops behind the bias gradient and Mean over pixels (sums over a run of axes),
UnsortedSegmentSum, Select and the gradient-descent update.
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
