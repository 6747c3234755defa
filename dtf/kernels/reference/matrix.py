"""Reference semantics of the diagonal and band ops (Diag, DiagPart, MatrixDiag,
MatrixDiagPart, MatrixSetDiag, MatrixBandPart), LinSpace, ReverseSequence and Roll."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference


def _invalid(msg):
    return errors.InvalidArgumentError(None, None, msg)


@reference("Diag", host=True)
def _diag(attrs, d):
    if d.ndim < 1:
        raise _invalid(f"Input must be at least rank 1, got {d.ndim}")
    n = d.size
    out = np.zeros((n, n), d.dtype)
    out[np.arange(n), np.arange(n)] = d.reshape(-1)
    return out.reshape(d.shape + d.shape)


@reference("DiagPart", host=True)
def _diag_part(attrs, x):
    k = x.ndim // 2
    if x.ndim % 2 or x.ndim == 0 or x.shape[:k] != x.shape[k:]:
        raise _invalid(f"Input must have even rank and the shape [D1..Dk, D1..Dk], got {list(x.shape)}")
    n = int(np.prod(x.shape[:k]))
    return x.reshape(n, n)[np.arange(n), np.arange(n)].reshape(x.shape[:k])


def _rank2(x, what):
    if x.ndim < 2:
        raise _invalid(f"{what} must be at least rank 2, got shape {list(x.shape)}")


@reference("MatrixDiag", host=True)
def _matrix_diag(attrs, d):
    if d.ndim < 1:
        raise _invalid(f"diagonal must be at least 1-dim, got shape {list(d.shape)}")
    n = d.shape[-1]
    out = np.zeros(d.shape + (n,), d.dtype)
    out[..., np.arange(n), np.arange(n)] = d
    return out


@reference("MatrixDiagPart", host=True)
def _matrix_diag_part(attrs, x):
    _rank2(x, "input")
    return np.ascontiguousarray(np.diagonal(x, axis1=-2, axis2=-1))


@reference("MatrixSetDiag", host=True)
def _matrix_set_diag(attrs, x, d):
    _rank2(x, "input")
    n = min(x.shape[-2:])
    if d.shape != x.shape[:-2] + (n,):
        raise _invalid(f"diagonal must have shape {list(x.shape[:-2]) + [n]}, got {list(d.shape)}")
    out = np.array(x, copy=True)
    out[..., np.arange(n), np.arange(n)] = d
    return out


@reference("MatrixBandPart", host=True)
def _matrix_band_part(attrs, x, num_lower, num_upper):
    _rank2(x, "input")
    m, n = x.shape[-2:]
    lower, upper = int(num_lower), int(num_upper)
    if lower > m or upper > n:
        raise _invalid(f"num_lower ({lower}) must be <= rows ({m}) and num_upper ({upper}) <= "
                       f"columns ({n})")
    rows, cols = np.arange(m)[:, None], np.arange(n)[None, :]
    keep = ((lower < 0) | (rows - cols <= lower)) & ((upper < 0) | (cols - rows <= upper))
    return np.where(keep, x, np.zeros((), x.dtype))


@reference("LinSpace", host=True)
def _lin_space(attrs, start, stop, num):
    n = int(num)
    if n <= 0:
        raise _invalid(f"Requires num > 0: {n}")
    if n == 1:
        return np.asarray([start], dtype=np.asarray(start).dtype)
    # TF computes start + i * step (not numpy's symmetric form), and ends exactly at stop.
    step = (np.asarray(stop, np.float64) - start) / (n - 1)
    out = start + np.arange(n) * step
    out[-1] = stop
    return out.astype(np.asarray(start).dtype)


@reference("ReverseSequence", host=True)
def _reverse_sequence(attrs, x, seq_lengths):
    seq, batch = attrs["seq_dim"] % x.ndim, attrs["batch_dim"] % x.ndim
    if seq == batch:
        raise _invalid(f"seq_dim == batch_dim == {seq}")
    lengths = np.asarray(seq_lengths).reshape(-1)
    if lengths.size != x.shape[batch]:
        raise _invalid(f"len(seq_lens) != input.dims({batch}), ({lengths.size} vs. {x.shape[batch]})")
    if (lengths < 0).any() or (lengths > x.shape[seq]).any():
        raise _invalid(f"seq_lens must be in [0, {x.shape[seq]}], got {lengths.tolist()}")
    out = np.array(x, copy=True)
    for b, n in enumerate(lengths):
        n = int(n)
        index = [slice(None)] * x.ndim
        index[batch] = b
        index[seq] = slice(0, n)
        src = [slice(None)] * x.ndim
        src[batch] = b
        src[seq] = slice(n - 1, None, -1) if n else slice(0, 0)
        out[tuple(index)] = x[tuple(src)]
    return out


@reference("Roll", host=True)
def _roll(attrs, x, shift, axis):
    shifts, axes = np.atleast_1d(shift).astype(np.int64), np.atleast_1d(axis).astype(np.int64)
    if shifts.shape != axes.shape:
        raise _invalid(f"shift and axis must have the same size, got {shifts.size} and {axes.size}")
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _invalid(f"axis {int(a)} is out of range for rank {x.ndim}")
    return np.roll(x, tuple(int(s) for s in shifts), tuple(int(a) for a in axes))
