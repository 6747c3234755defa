"""The kernel of PyFunc / PyFuncStateless: calls the Python function of the op's token,
checks what it returns as TF does, and maps its exceptions onto tf.errors classes."""
from __future__ import annotations

import traceback

import numpy as np

from dtf.framework import dtypes, errors
from dtf.kernels.registry import register_kernel

# Exception class -> tf.errors class, as TF's py_func maps them; anything else: Unknown.
_ERRORS = ((ValueError, errors.InvalidArgumentError), (TypeError, errors.InvalidArgumentError),
           (StopIteration, errors.OutOfRangeError), (MemoryError, errors.ResourceExhaustedError),
           (NotImplementedError, errors.UnimplementedError), (IndexError, errors.OutOfRangeError))

# TF's C++ names in "is double, but expects float".
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _cpp_name(dtype) -> str:
    return _CPP_NAMES.get(dtype.name, dtype.name)


def _as_output(value, want, i, token):
    arr = np.asarray(value)
    if arr.dtype.kind in "USO":
        if want != dtypes.string:
            raise errors.InvalidArgumentError(
                None, None, f"{i}-th value returned by {token} is string, but expects {_cpp_name(want)}")
        flat = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in arr.reshape(-1)]
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = flat if flat else []
        return out
    got = dtypes.as_dtype(arr.dtype)
    if got != want:
        raise errors.InvalidArgumentError(
            None, None, f"{i}-th value returned by {token} is {_cpp_name(got)}, but expects "
            f"{_cpp_name(want)}")
    return arr if arr.flags.c_contiguous else arr.copy()  # 0-d stays 0-d


def _factory(node):
    token = node.attrs["token"]
    touts = [dtypes.as_dtype(t) for t in node.attrs["Tout"]]
    shown = token.split("@", 1)[0]

    def compute(ctx, *inputs):
        from dtf.ops.script_ops import lookup
        func = lookup(token)
        if func is None:
            where = f" (task {ctx.task})" if getattr(ctx, "task", None) else ""
            raise errors.InvalidArgumentError(
                None, None, f"py_func {shown} was created by another process and cannot run "
                f"in this one{where}: a py_func runs only in the process that built its graph. "
                "Place it (tf.device) on a task served by that process, or on the client's own "
                "local session")
        try:
            result = func(*inputs)
        except Exception as e:  # noqa: BLE001 - reported as TF reports it
            cls = next((c for t, c in _ERRORS if isinstance(e, t)), errors.UnknownError)
            raise cls(None, None, f"{type(e).__name__}: {e}\n{traceback.format_exc()}") from e
        values = list(result) if isinstance(result, (list, tuple)) else (
            [] if result is None and not touts else [result])
        if len(values) != len(touts):
            raise errors.InvalidArgumentError(
                None, None, f"{shown} returns {len(values)} values, but expects to see "
                f"{len(touts)} values.")
        outs = tuple(_as_output(v, t, i, shown) for i, (v, t) in enumerate(zip(values, touts)))
        if not outs:
            return None
        return outs if len(outs) != 1 else outs[0]

    return compute


register_kernel("PyFunc", "CPU", host=True)(_factory)
register_kernel("PyFuncStateless", "CPU", host=True)(_factory)
