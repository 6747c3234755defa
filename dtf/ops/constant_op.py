"""tf.constant and the Const op."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.state.resources import as_array


@register_op("Const")
def _const_infer(inputs, attrs):
    return [(attrs["dtype"], attrs["value"].shape)]


NotDifferentiable("Const")


def _infer_dtype(value):
    """TF's dtype for a Python or numpy value: float -> float32, int -> int32 (int64 when
    it does not fit), bool -> bool, str/bytes -> string, numpy dtypes kept."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "USO":
            return dtypes.string
        return dtypes.as_dtype(value.dtype)
    if isinstance(value, np.generic):
        return dtypes.as_dtype(value.dtype)
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "USO":
        return dtypes.string
    if kind == "b":
        return dtypes.bool
    if kind == "f":
        return dtypes.float32
    if kind in "iu":
        if arr.size and (arr.max() > np.iinfo(np.int32).max or arr.min() < np.iinfo(np.int32).min):
            return dtypes.int64
        return dtypes.int32
    raise TypeError(f"Failed to convert object of type {type(value)} to Tensor. Contents: "
                    f"{value!r}. Consider casting elements to a supported type.")


def _check_convertible(value, dtype):
    """TF refuses lossy conversions of Python values (1.5 -> int32 is a TypeError)."""
    if isinstance(value, np.ndarray):
        return
    arr = np.asarray(value)
    if dtype.is_integer and arr.dtype.kind == "f" and not np.all(np.mod(arr, 1) == 0):
        raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                        f"'{type(value).__name__}' instead.")
    if dtype.is_integer and arr.dtype.kind == "b":
        raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
    if dtype.is_bool and arr.dtype.kind in "iuf":  # tf.constant(1, tf.bool) is refused too
        raise TypeError(f"Expected bool, got {value!r} of type '{type(value).__name__}' instead.")
    if (dtype.is_numeric or dtype.is_bool) and arr.dtype.kind in "USO":
        raise TypeError(f"Expected {dtype.name}, got {value!r} of type '{type(value).__name__}' instead.")
    if dtype == dtypes.string and arr.dtype.kind not in "USO" and arr.size:
        raise TypeError(f"Expected string, got {value!r} of type '{type(value).__name__}' instead.")
    if dtype.is_integer and arr.dtype.kind in "iu" and arr.size:
        info = np.iinfo(dtype.as_numpy_dtype)
        if arr.max() > info.max or arr.min() < info.min:
            raise ValueError(f"Value {value!r} is out of range for {dtype.name}")


def make_ndarray(value, dtype=None, shape=None, verify_shape=False):
    """The numpy array a Const holds (what tf.make_tensor_proto + MakeNdarray give)."""
    dtype = _infer_dtype(value) if dtype is None else dtypes.as_dtype(dtype)
    _check_convertible(value, dtype)
    arr = as_array(value, dtype)
    if shape is not None:
        shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else _ops_shape_list(shape))]
        n = int(np.prod(shape)) if shape else 1
        if arr.shape == tuple(shape):
            pass
        elif verify_shape:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {arr.shape}.")
        elif arr.size == 1:
            arr = np.full(shape, arr.reshape(()), dtype=arr.dtype)
        elif arr.size == n:
            arr = arr.reshape(shape)
        elif arr.size < n:
            # TF pads with the last element when fewer values than the shape needs.
            flat = arr.reshape(-1)
            arr = np.concatenate([flat, np.repeat(flat[-1:], n - flat.size)]).reshape(shape)
        else:
            raise TypeError(f"Too many elements provided. Needed at most {n}, but received {arr.size}")
    return arr


def _ops_shape_list(shape):
    from dtf.framework.tensor_shape import as_shape

    return as_shape(shape).as_list()


def constant(value, dtype=None, shape=None, name="Const", verify_shape=False):
    """Creates a constant tensor (numbers, nested lists, numpy arrays or strings)."""
    if isinstance(value, _ops.Tensor):
        raise TypeError("tf.constant does not accept a Tensor as its value")
    arr = make_ndarray(value, dtype, shape, verify_shape)
    dt = dtypes.as_dtype(dtype) if dtype is not None else _infer_dtype(arr if arr.dtype != object else value)
    return _ops.make_tensor("Const", [], {"value": arr, "dtype": dt}, name=name)


def is_constant(t):
    return isinstance(t, _ops.Tensor) and t.op.type == "Const"

__all__ = ["constant"]  # what ``import dtf`` exports from this family
