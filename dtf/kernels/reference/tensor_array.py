"""TensorArray as a dense buffer: element i is row i of one array whose first dimension is
the array's size. Writes return a new buffer (value semantics, as TF's TensorList), so a
TensorArray is an ordinary tensor to loops, gradients and the wire.

A buffer of rank 1 holds scalars or nothing written yet: the first write of a non-scalar
element sizes its rows (an element shape unknown when the array was made)."""
from __future__ import annotations

import numpy as np

from .table import reference


def _rows_for(buf, value, where):
    """``buf`` with rows shaped like ``value`` (allocated on the first non-scalar write)."""
    if buf.shape[1:] == value.shape:
        return buf
    if buf.ndim == 1 and value.ndim > 0:
        return np.zeros(buf.shape + value.shape, buf.dtype)
    raise ValueError(f"Could not write to TensorArray index {where} because the value shape is "
                     f"{list(value.shape)} which is incompatible with the TensorArray's inferred "
                     f"element shape: {list(buf.shape[1:])}")


def _grown(buf, size, dynamic, where):
    if size <= len(buf):
        return buf.copy()
    if not dynamic:
        raise ValueError(f"Tried to write to index {where} but array is not resizeable and "
                         f"size is: {len(buf)}")
    out = np.zeros((size,) + buf.shape[1:], buf.dtype)
    out[:len(buf)] = buf
    return out


def _index(i, n, what):
    i = int(np.asarray(i))
    if i < 0:
        raise ValueError(f"Tried to {what} index {i} of a TensorArray: indices must be >= 0")
    return i


@reference("TensorArrayNew")
def _new(attrs, size):
    shape = attrs.get("element_shape")
    known = shape is not None and all(d is not None for d in shape)
    n = int(np.asarray(size))
    if n < 0:
        raise ValueError(f"TensorArray size must be >= 0, got {n}")
    return np.zeros((n,) + (tuple(shape) if known else ()), attrs["dtype"].as_numpy_dtype)


@reference("TensorArrayWrite")
def _write(attrs, buf, index, value):
    value = np.asarray(value, buf.dtype)
    i = _index(index, len(buf), "write to")
    out = _grown(_rows_for(buf, value, i), i + 1, attrs["dynamic_size"], i)
    out[i] = value
    return out


@reference("TensorArrayRead")
def _read(attrs, buf, index):
    i = _index(index, len(buf), "read from")
    if i >= len(buf):
        raise ValueError(f"Tried to read from index {i} but array size is: {len(buf)}")
    return buf[i].copy()


@reference("TensorArrayScatter")
def _scatter(attrs, buf, indices, value):
    idx = np.asarray(indices, np.int64).reshape(-1)
    value = np.asarray(value, buf.dtype)
    if len(idx) != len(value):
        raise ValueError(f"TensorArray scatter: {len(idx)} indices for {len(value)} values")
    if len(idx) and idx.min() < 0:
        raise ValueError(f"Tried to scatter to a negative index {idx.min()} of a TensorArray")
    out = _rows_for(buf, value[0] if len(value) else value[:0].reshape(value.shape[1:]), idx)
    out = _grown(out, int(idx.max()) + 1 if len(idx) else 0, attrs["dynamic_size"], idx)
    out[idx] = value
    return out


@reference("TensorArrayWriteGrad")
def _write_grad(attrs, grad, buf, index):
    """(d buffer before the write, d value): the written row's gradient goes to the value."""
    i = int(np.asarray(index))
    d_value = grad[i].copy()
    return _zeroed_rows(grad, buf, [i]), d_value


@reference("TensorArrayScatterGrad")
def _scatter_grad(attrs, grad, buf, indices):
    idx = np.asarray(indices, np.int64).reshape(-1)
    return _zeroed_rows(grad, buf, idx), grad[idx]


@reference("TensorArrayReadGrad")
def _read_grad(attrs, grad, buf, index):
    i = int(np.asarray(index))
    grad = np.asarray(grad)
    out = np.zeros(buf.shape if buf.shape[1:] == grad.shape else (len(buf),) + grad.shape,
                   grad.dtype)
    out[i] = grad
    return out


def _zeroed_rows(grad, buf, rows):
    """The gradient of the buffer a write or scatter read: ``grad`` cut to the buffer's size
    with the overwritten rows zeroed (a buffer not sized yet gets zeros of its own shape)."""
    if buf.shape[1:] != grad.shape[1:]:
        return np.zeros(buf.shape, grad.dtype)
    out = grad[:len(buf)].copy()
    keep = [r for r in rows if r < len(buf)]
    out[keep] = 0
    return out
