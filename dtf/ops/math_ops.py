"""Elementwise math: unary and binary ops with numpy broadcasting, comparisons, logic,
casts, add_n, clip_by_value. Reductions and matmul live in reduction_ops / linalg_ops.

The op tables below are the single source of truth: each row defines the TF function,
the op type and (for binary ops) the Python operator name that maps to it.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import broadcast_shapes
from .common import (bool_broadcast_infer, broadcast_infer, const_value, convert, convert_same, fmt_shape,
                     same_as_input)

# (public function name, op type)
UNARY_OPS = [
    ("negative", "Neg"), ("abs", "Abs"), ("sign", "Sign"), ("square", "Square"),
    ("sqrt", "Sqrt"), ("rsqrt", "Rsqrt"), ("reciprocal", "Reciprocal"), ("exp", "Exp"),
    ("log", "Log"), ("log1p", "Log1p"), ("sin", "Sin"), ("cos", "Cos"), ("tan", "Tan"),
    ("tanh", "Tanh"), ("sigmoid", "Sigmoid"), ("floor", "Floor"), ("ceil", "Ceil"),
    ("round", "Round"), ("expm1", "Expm1"), ("erf", "Erf"), ("is_nan", "IsNan"),
    ("is_inf", "IsInf"), ("is_finite", "IsFinite"), ("logical_not", "LogicalNot"),
    ("atan", "Atan"), ("asin", "Asin"), ("acos", "Acos"), ("sinh", "Sinh"), ("cosh", "Cosh"),
]
_BOOL_UNARY = {"IsNan", "IsInf", "IsFinite"}

# (public function name, op type, Python operator it backs, TF's lower-case op name for it)
BINARY_OPS = [
    ("add", "Add", "add"), ("subtract", "Sub", "sub"), ("multiply", "Mul", "mul"),
    ("realdiv", "RealDiv", None), ("floordiv", "FloorDiv", "floordiv"),
    ("floormod", "FloorMod", "mod"), ("pow", "Pow", "pow"), ("maximum", "Maximum", None),
    ("minimum", "Minimum", None), ("squared_difference", "SquaredDifference", None),
    ("truncatediv", "TruncateDiv", None), ("truncatemod", "TruncateMod", None),
    ("div_no_nan", "DivNoNan", None),
    ("atan2", "Atan2", None), ("xdivy", "Xdivy", None),
]
COMPARISON_OPS = [
    ("less", "Less", "lt"), ("less_equal", "LessEqual", "le"), ("greater", "Greater", "gt"),
    ("greater_equal", "GreaterEqual", "ge"), ("equal", "Equal", None),
    ("not_equal", "NotEqual", None),
]
LOGICAL_OPS = [("logical_and", "LogicalAnd", "and"), ("logical_or", "LogicalOr", "or"),
               ("logical_xor", "LogicalXor", "xor")]


for _fn, _op in UNARY_OPS:
    if _op in _BOOL_UNARY:
        register_op(_op)(lambda inputs, attrs: [(dtypes.bool, inputs[0].shape)])
    else:
        register_op(_op)(same_as_input)
for _fn, _op, _ in BINARY_OPS:
    register_op(_op)(broadcast_infer)
for _fn, _op, _ in COMPARISON_OPS + LOGICAL_OPS:
    register_op(_op)(bool_broadcast_infer)


def _make_unary(op_type):
    def fn(x, name=None):
        x = convert(x, "x")
        return _ops.make_tensor(op_type, [x], {"T": x.dtype}, name=name or op_type)

    return fn


def _make_binary(op_type, default_name=None, dtype=None):
    """A binary op's constructor. As TF's op helper, inputs are converted inside the op's
    scope: tf.multiply(a, 3.0, name="y") is op "y" reading constant "y/y" (and with no
    name, "Mul" reading "Mul/y"; operators use TF's lower-case names: "mul/y")."""

    def fn(x, y, name=None):
        with _ops.name_scope(name, default_name or op_type, [x, y]) as scope:
            x, y = convert_same([x, y], op_type, dtype=dtype)
            return _ops.make_tensor(op_type, [x, y], {"T": x.dtype}, name=scope)

    return fn


def _make_logical(op_type):
    return _make_binary(op_type, dtype=dtypes.bool)


_g = globals()
for _fn, _op in UNARY_OPS:
    _g[_fn] = _make_unary(_op)
for _fn, _op, _ in BINARY_OPS + COMPARISON_OPS:
    _g[_fn] = _make_binary(_op)
for _fn, _op, _ in LOGICAL_OPS:
    _g[_fn] = _make_logical(_op)

neg = negative  # noqa: F821 - defined from the table above
sub = subtract  # noqa: F821
mul = multiply  # noqa: F821
floor_div = floordiv  # noqa: F821
mod = floormod  # noqa: F821


def _logical_not(x, name=None):
    x = convert(x, "x", dtype=dtypes.bool)
    return _ops.make_tensor("LogicalNot", [x], {"T": dtypes.bool}, name=name or "LogicalNot")


logical_not = _logical_not


def truediv(x, y, name=None):
    """x / y; integers are cast to float first (TF1's truediv rules)."""
    with _ops.name_scope(name, "truediv", [x, y]) as scope:
        x, y = convert_same([x, y], "RealDiv")
        dt = x.dtype
        if dt.is_integer:
            target = dtypes.float64 if dt in (dtypes.int32, dtypes.int64, dtypes.uint16) else dtypes.float32
            x, y = cast(x, target), cast(y, target)
        return _ops.make_tensor("RealDiv", [x, y], {"T": x.dtype}, name=scope)


def divide(x, y, name=None):
    return truediv(x, y, name=name or "truediv") if name else truediv(x, y)


def div(x, y, name=None):
    """TF1's tf.div: Python 2 semantics (integer division for ints)."""
    x, y = convert_same([x, y], "Div")
    if x.dtype.is_integer:
        return floordiv(x, y, name=name)  # noqa: F821
    return _ops.make_tensor("RealDiv", [x, y], {"T": x.dtype}, name=name or "div")


def scalar_mul(scalar, x, name=None):
    return multiply(scalar, x, name=name)  # noqa: F821


# -- Python operator overloads (x + y makes an op named "add", like TF) ----------------
def _overload(op_type, tf_name):
    return _make_binary(op_type, tf_name)


def _truediv_overload(x, y):
    return truediv(x, y)


def _matmul_overload(x, y):
    from .linalg_ops import matmul

    with _ops.name_scope(None, "matmul", [x, y]) as scope:  # x @ y is op "matmul", as in TF
        return matmul(x, y, name=scope)


def _logic_overload(op_type, tf_name):
    return _make_binary(op_type, tf_name, dtype=dtypes.bool)


BINARY_OVERLOADS = {overload: _overload(op, overload) for _fn, op, overload in BINARY_OPS + COMPARISON_OPS
                    if overload}
BINARY_OVERLOADS.update({overload: _logic_overload(op, f"Logical{overload.capitalize()}")
                         for _fn, op, overload in LOGICAL_OPS})
BINARY_OVERLOADS["add"] = _overload("Add", "add")
BINARY_OVERLOADS["truediv"] = _truediv_overload
BINARY_OVERLOADS["matmul"] = _matmul_overload


def _neg_overload(x):
    return _ops.make_tensor("Neg", [x], {"T": x.dtype}, name="Neg")


UNARY_OVERLOADS = {
    "neg": _neg_overload,
    "abs": lambda x: _g["abs"](x),
    "invert": lambda x: logical_not(x),
}


# -- casts, add_n, clip ----------------------------------------------------------------
@register_op("Cast")
def _cast_infer(inputs, attrs):
    return [(attrs["DstT"], inputs[0].shape)]


def cast(x, dtype, name=None):
    """Casts x to dtype (a no-op returning x when it already has that dtype)."""
    base = dtypes.as_dtype(dtype)
    if isinstance(x, _ops.Tensor) and x.dtype == base:
        return x
    with _ops.name_scope(name, "Cast", [x]) as scope:
        x = convert(x, "x")
        if x.dtype == base:
            return x
        return _ops.make_tensor("Cast", [x], {"SrcT": x.dtype, "DstT": base, "T": x.dtype}, name=scope)


def to_float(x, name="ToFloat"):
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    return cast(x, dtypes.int64, name=name)


def saturate_cast(value, dtype, name=None):
    from .clip_ops import clip_by_value

    dtype = dtypes.as_dtype(dtype)
    value = convert(value)
    if value.dtype.is_floating and dtype.is_integer:
        value = clip_by_value(value, float(dtype.min), float(dtype.max))
    return cast(value, dtype, name=name)


@register_op("AddN")
def _add_n_infer(inputs, attrs):
    shape = inputs[0].shape
    for t in inputs[1:]:
        if not shape.is_compatible_with(t.shape):
            raise ValueError(f"Shapes must be equal rank, but are {fmt_shape(shape)} and "
                             f"{fmt_shape(t.shape)} for 'AddN' with input shapes: "
                             + ", ".join(fmt_shape(i.shape) for i in inputs) + ".")
        shape = shape.merge_with(t.shape)
    return [(inputs[0].dtype, shape)]


def add_n(inputs, name=None):
    """Sums a list of tensors of the same shape and dtype."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and shape")
    inputs = convert_same(list(inputs), "AddN", names=[f"inputs_{i}" for i in range(len(inputs))])
    if len(inputs) == 1:
        if name:
            from .array_ops import identity

            return identity(inputs[0], name=name)
        return inputs[0]
    return _ops.make_tensor("AddN", inputs, {"T": inputs[0].dtype, "N": len(inputs)}, name=name or "AddN")


accumulate_n = add_n


@register_op("Select")
def _select_infer(inputs, attrs):
    c, x, y = inputs
    shape = broadcast_shapes(x.shape, y.shape)
    if c.shape.ndims is not None and shape.ndims is not None and c.shape.ndims == shape.ndims:
        shape = broadcast_shapes(c.shape, shape)
    return [(x.dtype, shape)]


@register_op("SelectV2")
def _select_v2_infer(inputs, attrs):
    c, x, y = inputs
    return [(x.dtype, broadcast_shapes(c.shape, broadcast_shapes(x.shape, y.shape)))]


def where(condition, x=None, y=None, name=None):
    """TF1 tf.where: with x and y, picks elementwise (a vector condition picks rows);
    without them, returns the int64 coordinates of true elements."""
    condition = convert(condition, "condition", dtype=dtypes.bool)
    if x is None and y is None:
        from .array_ops import _where_indices

        return _where_indices(condition, name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    x, y = convert_same([x, y], "Select", names=("t", "e"))
    cs, xs = condition.shape, x.shape
    if cs.ndims is not None and xs.ndims is not None:
        if cs.ndims != xs.ndims and cs.ndims != 1:
            raise ValueError(f"Shapes must be equal rank, but are {cs.ndims} and {xs.ndims} for "
                             f"'Select' with input shapes: {fmt_shape(cs)}, {fmt_shape(xs)}, "
                             f"{fmt_shape(y.shape)}.")
    return _ops.make_tensor("Select", [condition, x, y], {"T": x.dtype}, name=name or "Select")


def where_v2(condition, x=None, y=None, name=None):
    condition = convert(condition, "condition", dtype=dtypes.bool)
    if x is None and y is None:
        from .array_ops import _where_indices

        return _where_indices(condition, name)
    x, y = convert_same([x, y], "SelectV2", names=("t", "e"))
    return _ops.make_tensor("SelectV2", [condition, x, y], {"T": x.dtype}, name=name or "SelectV2")

from . import math_grad  # noqa: E402,F401  (registers the gradients)

def _scan_infer(inputs, attrs):
    x, axis = inputs
    a, nd = const_value(axis), x.shape.ndims
    if a is not None and nd is not None and not -nd <= int(a) < nd:
        raise ValueError(f"axis {int(a)} is out of range for a tensor of rank {nd} in "
                         f"'{attrs.get('_op_name', '')}' with input shapes: {fmt_shape(x.shape)}")
    return [(x.dtype, x.shape)]


register_op("Cumsum")(_scan_infer)
register_op("Cumprod")(_scan_infer)


def _scan(op_type, x, axis, exclusive, reverse, name):
    with _ops.name_scope(name, op_type, [x]) as scope:
        x = convert(x, "x")
        axis = convert(axis, "axis", hint=dtypes.int32)
        return _ops.make_tensor(op_type, [x, axis], {"T": x.dtype, "Tidx": axis.dtype,
                                                     "exclusive": bool(exclusive),
                                                     "reverse": bool(reverse)}, name=scope)


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running sums along ``axis``; ``exclusive`` leaves each element out of its own sum
    (the first is 0), ``reverse`` sums from the end."""
    return _scan("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Running products along ``axis`` (``exclusive``, ``reverse`` as in ``cumsum``)."""
    return _scan("Cumprod", x, axis, exclusive, reverse, name)


# Public names: ``__all__`` is what ``import dtf`` exports from this family (tf.*), and
# MATH_API what tf.math does (dtf/math.py reads both; a new function is listed here only).
__all__ = sorted(
    {fn for fn, *_ in UNARY_OPS + BINARY_OPS + COMPARISON_OPS + LOGICAL_OPS} - {"xdivy"}
    | {"floor_div", "mod", "truediv", "divide", "div", "scalar_mul", "cast",
       "to_float", "to_double", "to_int32", "to_int64", "saturate_cast", "add_n", "accumulate_n",
       "where", "where_v2", "cumsum", "cumprod"})
divide_no_nan = div_no_nan  # noqa: F821 - defined from BINARY_OPS above; tf.math's name for it
# TF 1.15 exports xdivy only as tf.math.xdivy, and keeps the casts, where, the truncating
# and "real" divisions and accumulate_n out of tf.math.
MATH_API = sorted(
    set(__all__) - {"accumulate_n", "cast", "div", "div_no_nan", "floor_div", "realdiv",
                    "saturate_cast", "to_double", "to_float", "to_int32", "to_int64", "truncatediv",
                    "truncatemod", "where", "where_v2"}
    | {"xdivy", "divide_no_nan"})
