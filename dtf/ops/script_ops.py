"""tf.py_func and tf.numpy_function: a Python function as an op.

The function stays in the process that built the graph, in a table keyed by a token that
names that process; the PyFunc op carries only the token. It therefore runs where that
process runs ops: in a local session, or on a task served by a tf.train.Server in the same
process (the usual between-graph trainer). Placed on a task of another process, the step
fails with InvalidArgumentError saying so, instead of running some other function.
"""
from __future__ import annotations

import itertools
import os
import threading
import uuid

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape

from .common import convert

__all__ = ["py_func", "numpy_function"]

# token -> the Python callable; tokens are unique across processes and runs.
_FUNCS: dict = {}
_lock = threading.Lock()
_counter = itertools.count()
_PROCESS = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _register(func) -> str:
    with _lock:
        token = f"pyfunc_{next(_counter)}@{_PROCESS}"
        _FUNCS[token] = func
    return token


def lookup(token: str):
    """The function behind ``token``, or None when another process registered it."""
    return _FUNCS.get(token)


def _infer(inputs, attrs):
    return [(dtypes.as_dtype(t), TensorShape(None)) for t in attrs["Tout"]]


register_op("PyFunc", stateful=True)(_infer)
register_op("PyFuncStateless")(_infer)
NotDifferentiable("PyFunc")
NotDifferentiable("PyFuncStateless")


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TF's argument name
    """Wraps ``func`` (numpy arrays in, numpy arrays out) as an op with outputs of dtypes
    ``Tout`` (a list gives a list of tensors, one dtype a single tensor) and unknown
    shapes. Each returned value must have exactly its declared dtype, as in TF (a Python
    float is float64). Not differentiable; see the module doc for where it can run."""
    as_list = isinstance(Tout, (list, tuple))
    touts = [dtypes.as_dtype(t) for t in (Tout if as_list else [Tout])]
    op_type = "PyFunc" if stateful else "PyFuncStateless"
    with _ops.name_scope(name, op_type, list(inp)) as scope:
        inputs = [convert(x, "input") for x in inp]
        attrs = {"token": _register(func), "Tin": [t.dtype for t in inputs], "Tout": touts}
        op = _ops.make_op(op_type, inputs, attrs, name=scope)
    outputs = op.outputs
    if not as_list:
        return outputs[0]
    return outputs if outputs else op


def numpy_function(func, inp, Tout, name=None):  # noqa: N803
    """tf.py_func that is always stateful (TF 1.15's numpy_function)."""
    return py_func(func, inp, Tout, stateful=True, name=name)
