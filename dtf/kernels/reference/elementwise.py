"""Reference semantics of the elementwise ops, casts, add_n and select."""
from __future__ import annotations

import math

import numpy as np

from .table import REFERENCE, reference


def _elementwise(op_type, fn):
    REFERENCE[op_type] = lambda attrs, *xs: np.asarray(fn(*xs))


def _keep(fn):
    """Result cast back to the input dtype (numpy may promote, e.g. float16 math)."""
    def run(x, *rest):
        out = fn(x, *rest)
        return out.astype(x.dtype, copy=False) if isinstance(out, np.ndarray) else np.asarray(out, x.dtype)
    return run


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return _keep(lambda v: 1.0 / (1.0 + np.exp(-v)))(x)


def _rsqrt(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return _keep(lambda v: 1.0 / np.sqrt(v))(x)


def _reciprocal(x):
    with np.errstate(divide="ignore"):
        if x.dtype.kind in "iu":
            return (1 // np.where(x == 0, 1, x)).astype(x.dtype)
        return _keep(lambda v: 1.0 / v)(x)


def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _quiet(fn):
    def run(*xs):
        with np.errstate(all="ignore"):
            return fn(*xs)
    return run


def _floordiv(x, y):
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    return np.floor_divide(x, y)


def _truncatemod(x, y):
    """C's remainder: the sign of the dividend (TF's TruncateMod)."""
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    return np.fmod(x, y)


def _floormod(x, y):
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise ValueError("Integer division by zero")
    return np.mod(x, y)


def _truncatediv(x, y):
    if x.dtype.kind in "iu":
        if np.any(y == 0):
            raise ValueError("Integer division by zero")
        return (np.trunc(x / y)).astype(x.dtype)
    return np.trunc(x / y)


def _pow(x, y):
    if x.dtype.kind in "iu" and np.any(y < 0):
        raise ValueError("Integers to negative integer powers are not allowed")
    return np.power(x, y)


def _div_no_nan(x, y):
    safe = np.where(y == 0, 1, y)
    return np.where(y == 0, np.zeros((), x.dtype), x / safe).astype(x.dtype)


def _xdivy(x, y):
    safe = np.where(x == 0, 1, y)
    return np.where(x == 0, np.zeros((), x.dtype), x / safe).astype(x.dtype)


def _realdiv(x, y):
    if x.dtype.kind in "iu":
        if np.any(y == 0):
            raise ValueError("Integer division by zero")
        return (np.trunc(x / y)).astype(x.dtype)
    return np.true_divide(x, y)


for _op, _f in {
    "Neg": np.negative, "Abs": np.abs, "Sign": np.sign, "Square": np.square,
    "Sqrt": _quiet(np.sqrt), "Rsqrt": _rsqrt, "Reciprocal": _reciprocal, "Exp": _quiet(np.exp),
    "Log": _quiet(np.log), "Log1p": _quiet(np.log1p), "Sin": np.sin, "Cos": np.cos,
    "Tan": np.tan, "Tanh": np.tanh, "Sigmoid": _sigmoid, "Floor": np.floor, "Ceil": np.ceil,
    "Round": np.round, "Expm1": _quiet(np.expm1), "Erf": _erf, "IsNan": np.isnan,
    "IsInf": np.isinf, "IsFinite": np.isfinite, "LogicalNot": np.logical_not,
    "Atan": np.arctan, "Asin": _quiet(np.arcsin), "Acos": _quiet(np.arccos), "Sinh": _quiet(np.sinh),
    "Cosh": _quiet(np.cosh),
}.items():
    _elementwise(_op, _keep(_f) if _op not in ("IsNan", "IsInf", "IsFinite", "LogicalNot") else _f)

for _op, _f in {
    "Sub": np.subtract, "Mul": np.multiply, "RealDiv": _quiet(_realdiv),
    "FloorDiv": _quiet(_floordiv), "FloorMod": _quiet(_floormod), "Pow": _quiet(_pow),
    "Maximum": np.maximum, "Minimum": np.minimum,
    "SquaredDifference": lambda x, y: np.square(x - y), "TruncateDiv": _quiet(_truncatediv),
    "TruncateMod": _quiet(_truncatemod),
    "DivNoNan": _quiet(_div_no_nan), "Atan2": np.arctan2, "Xdivy": _quiet(_xdivy),
}.items():
    _elementwise(_op, _keep(_f))

for _op, _f in {
    "Less": np.less, "LessEqual": np.less_equal, "Greater": np.greater,
    "GreaterEqual": np.greater_equal, "Equal": np.equal, "NotEqual": np.not_equal,
    "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or, "LogicalXor": np.logical_xor,
}.items():
    _elementwise(_op, _f)


# Add also concatenates strings (tf.add on tf.string).
def _add(attrs, x, y):
    if x.dtype == object:
        return np.asarray(np.char.add(x.astype(bytes), y.astype(bytes)), dtype=object)
    return np.asarray(_keep(np.add)(x, y))


REFERENCE["Add"] = _add


@reference("Cast")
def _cast(attrs, x):
    dst = attrs["DstT"]
    if dst.name == "string":
        raise ValueError("Cast to string is not supported")
    if x.dtype == object:
        raise ValueError("Cast from string is not supported; use tf.strings.to_number")
    with np.errstate(invalid="ignore"):
        return x.astype(dst.as_numpy_dtype)


@reference("AddN")
def _add_n(attrs, *xs):
    out = xs[0].copy() if xs[0].ndim else np.asarray(xs[0]).copy()
    for x in xs[1:]:
        out = out + x
    return out.astype(xs[0].dtype, copy=False)


@reference("Select")
def _select(attrs, c, x, y):
    if c.ndim == 1 and x.ndim > 1:
        if c.shape[0] != x.shape[0]:
            raise ValueError(f"condition has {c.shape[0]} elements but x has {x.shape[0]} rows")
        c = c.reshape((-1,) + (1,) * (x.ndim - 1))
    elif c.shape != x.shape or x.shape != y.shape:
        if not (c.shape == x.shape == y.shape):
            raise ValueError(f"condition, then and else must have the same shape: "
                             f"{list(c.shape)} vs {list(x.shape)} vs {list(y.shape)}")
    return np.where(c, x, y)


@reference("SelectV2")
def _select_v2(attrs, c, x, y):
    return np.where(c, x, y)
