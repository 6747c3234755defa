"""tf.assert_* / tf.debugging.assert_*: TF 1.15's checks, built from Assert and
comparisons. Each returns an op to run (or to make a control dependency): the step fails
with InvalidArgumentError listing the data when the condition is False. What can be
decided while building the graph is decided then, as TF does: assert_equal on two
constants raises InvalidArgumentError at once, the rank and dtype checks raise
ValueError / TypeError and return a no_op when they pass.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops

from . import array_ops, math_ops, reduction_ops
from .common import const_value
from .control_flow_ops import no_op, with_dependencies
from .logging_ops import Assert, check_numerics
# TF exports these under tf.debugging too; one definition, with tf.math's.
from .special_math_ops import is_non_decreasing, is_strictly_increasing  # noqa: F401

__all__ = [
    "assert_equal", "assert_none_equal", "assert_near", "assert_less", "assert_less_equal",
    "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
    "assert_non_negative", "assert_non_positive", "assert_rank", "assert_rank_at_least",
    "assert_rank_in", "assert_integer", "assert_type", "assert_scalar",
    "assert_proper_iterable", "assert_same_float_dtype", "is_numeric_tensor",
    "is_non_decreasing", "is_strictly_increasing", "verify_tensor_all_finite",
]


def _to_tensor(x, name, dtype=None):
    return _ops.convert_to_tensor(x, name=name, dtype=dtype)


def _static_fail(data):
    """TF's _assert_static: the data, constants shown as numpy prints them, one per line."""
    lines = []
    for d in data:
        value = const_value(d) if isinstance(d, _ops.Tensor) else None
        lines.append(str(value) if value is not None else str(d))
    from dtf.framework import errors
    raise errors.InvalidArgumentError(None, None, "\n".join(lines))


# op name -> (symbol, condition text, comparison op, numpy comparison or None).
# TF 1.15 checks x == y against constants statically, the others only when run; its texts
# for <=, > and x <= 0 lack the space before "x (", and are kept as TF prints them.
_BINARY = {
    "assert_equal": ("==", "Condition x == y did not hold element-wise:", math_ops.equal, np.equal),
    "assert_none_equal": ("!=", "Condition x != y did not hold for every single element:",
                          math_ops.not_equal, None),
    "assert_less": ("<", "Condition x < y did not hold element-wise:", math_ops.less, None),
    "assert_less_equal": ("<=", "Condition x <= y did not hold element-wise:",
                          math_ops.less_equal, None),
    "assert_greater": (">", "Condition x > y did not hold element-wise:", math_ops.greater, None),
    "assert_greater_equal": (">=", "Condition x >= y did not hold element-wise:",
                             math_ops.greater_equal, None),
}
_GLUED = {"assert_less_equal", "assert_greater"}  # TF's missing comma joins two lines


def _binary_assert(kind, x, y, data, summarize, message, name):
    _, text, compare, static = _BINARY[kind]
    message = message or ""
    with _ops.name_scope(name, kind, [x, y] + list(data or [])):
        x, y = _to_tensor(x, "x"), _to_tensor(y, "y")
        if kind == "assert_equal" and x is y:
            return no_op()
        if data is None:
            if kind in _GLUED:
                data = [message, f"{text}x ({x.name}) = ", x, f"y ({y.name}) = ", y]
            else:
                data = [message, text, f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        condition = reduction_ops.reduce_all(compare(x, y))
        if static is not None:
            xs, ys = const_value(x), const_value(y)
            if xs is not None and ys is not None and not np.all(static(xs, ys)):
                _static_fail(data)
        return Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x == y everywhere (broadcasting); fails at once when both are constants."""
    return _binary_assert("assert_equal", x, y, data, summarize, message, name)


def assert_none_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x != y everywhere."""
    return _binary_assert("assert_none_equal", x, y, data, summarize, message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x < y everywhere."""
    return _binary_assert("assert_less", x, y, data, summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x <= y everywhere."""
    return _binary_assert("assert_less_equal", x, y, data, summarize, message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x > y everywhere."""
    return _binary_assert("assert_greater", x, y, data, summarize, message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    """Asserts x >= y everywhere."""
    return _binary_assert("assert_greater_equal", x, y, data, summarize, message, name)


def _sign_assert(kind, text, compare_to_zero, x, data, summarize, message, name):
    message = message or ""
    with _ops.name_scope(name, kind, [x] + list(data or [])):
        x = _to_tensor(x, "x")
        if data is None:
            data = [message, text, f"x ({x.name}) = ", x]
        zero = _to_tensor(0, None, dtype=x.dtype)
        return compare_to_zero(x, zero, data, summarize)


def assert_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts x > 0 everywhere."""
    return _sign_assert("assert_positive", "Condition x > 0 did not hold element-wise:",
                        lambda x, z, d, s: assert_less(z, x, data=d, summarize=s),
                        x, data, summarize, message, name)


def assert_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts x < 0 everywhere."""
    return _sign_assert("assert_negative", "Condition x < 0 did not hold element-wise:",
                        lambda x, z, d, s: assert_less(x, z, data=d, summarize=s),
                        x, data, summarize, message, name)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """Asserts x >= 0 everywhere."""
    return _sign_assert("assert_non_negative", "Condition x >= 0 did not hold element-wise:",
                        lambda x, z, d, s: assert_less_equal(z, x, data=d, summarize=s),
                        x, data, summarize, message, name)


def assert_non_positive(x, data=None, summarize=None, message=None, name=None):
    """Asserts x <= 0 everywhere."""
    message = message or ""
    with _ops.name_scope(name, "assert_non_positive", [x] + list(data or [])):
        x = _to_tensor(x, "x")
        if data is None:  # TF 1.15 glues these two lines together
            data = [message, f"Condition x <= 0 did not hold element-wise:x ({x.name}) = ", x]
        zero = _to_tensor(0, None, dtype=x.dtype)
        return assert_less_equal(x, zero, data=data, summarize=summarize)


def assert_near(x, y, rtol=None, atol=None, data=None, summarize=None, message=None, name=None):
    """Asserts |x - y| < atol + rtol * |y| everywhere (default tolerances: 10 * eps of the
    dtype)."""
    message = message or ""
    with _ops.name_scope(name, "assert_near", [x, y, rtol, atol] + list(data or [])):
        x = _to_tensor(x, "x")
        y = _to_tensor(y, "y", dtype=x.dtype)
        eps = np.finfo(x.dtype.as_numpy_dtype).eps
        rtol = _to_tensor(10 * eps if rtol is None else rtol, "rtol", dtype=x.dtype)
        atol = _to_tensor(10 * eps if atol is None else atol, "atol", dtype=x.dtype)
        if data is None:
            data = [message, f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        tol = atol + rtol * math_ops.abs(y)
        diff = math_ops.abs(x - y)
        return Assert(reduction_ops.reduce_all(math_ops.less(diff, tol)), data,
                      summarize=summarize)


def _rank_assert(kind, words, x, ranks, static_ok, dynamic_ok, data, summarize, message, name):
    """assert_rank / _at_least / _in: decided at build time when x's rank and the ranks
    are known (ValueError, or a no_op when it holds), else an Assert on tf.rank(x)."""
    message = message or ""
    with _ops.name_scope(name, kind, [x] + list(ranks) + list(data or [])):
        x = _to_tensor(x, "x")
        ranks = [_to_tensor(r, "rank") for r in ranks]
        if data is None:
            data = [message, f"Tensor {x.name} must have {words}", *ranks,
                    "Received shape: ", array_ops.shape(x)]
        for r in ranks:
            assert_type(r, dtypes.int32)
        static = [const_value(r) for r in ranks]
        if all(s is not None for s in static):
            if any(np.ndim(s) != 0 for s in static):
                raise ValueError("Rank must be a scalar.")
            actual = x.shape.ndims
            if actual is not None:
                given = [int(s) for s in static]
                if not static_ok(actual, given):
                    shown = given[0] if kind != "assert_rank_in" else tuple(given)
                    raise ValueError(f"{message}.  Tensor {x.name} must have {words} {shown}.  "
                                     f"Received rank {actual}, shape {x.shape}")
                return no_op(name="static_checks_determined_all_ok")
        condition = dynamic_ok(array_ops.rank(x), ranks)
        for r, s in zip(ranks, static):
            if s is None:
                check = assert_rank(r, 0, data=["Rank must be a scalar. Received rank: ", r])
                condition = with_dependencies([check], condition)
        return Assert(condition, data, summarize=summarize)


def assert_rank(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts tf.rank(x) == rank."""
    return _rank_assert("assert_rank", "rank", x, [rank], lambda a, g: a == g[0],
                        lambda a, r: math_ops.equal(a, r[0]), data, summarize, message, name)


def assert_rank_at_least(x, rank, data=None, summarize=None, message=None, name=None):
    """Asserts tf.rank(x) >= rank."""
    return _rank_assert("assert_rank_at_least", "rank at least", x, [rank],
                        lambda a, g: a >= g[0], lambda a, r: math_ops.greater_equal(a, r[0]),
                        data, summarize, message, name)


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """Asserts tf.rank(x) is one of ``ranks``."""
    def any_equal(actual, given):
        result = math_ops.equal(given[0], actual)
        for r in given[1:]:
            result = math_ops.logical_or(result, math_ops.equal(r, actual))
        return result
    return _rank_assert("assert_rank_in", "rank in", x, list(ranks), lambda a, g: a in g,
                        any_equal, data, summarize, message, name)


def assert_integer(x, message=None, name=None):
    """TypeError unless x has an integer dtype; returns a no_op."""
    message = message or ""
    with _ops.name_scope(name, "assert_integer", [x]):
        x = _to_tensor(x, "x")
        if not x.dtype.is_integer:
            raise TypeError(f'{message}  Expected "x" to be integer type.  Found: {x.name} of '
                            f"dtype {x.dtype}")
        return no_op("statically_determined_was_integer")


def assert_type(tensor, tf_type, message=None, name=None):
    """TypeError unless ``tensor`` has dtype ``tf_type``; returns a no_op."""
    message = message or ""
    with _ops.name_scope(name, "assert_type", [tensor]):
        tensor = _to_tensor(tensor, "tensor")
        if tensor.dtype != tf_type:
            raise TypeError(f"{message}  {tensor.name} must be of type {dtypes.as_dtype(tf_type)}")
        return no_op("statically_determined_correct_type")


def assert_scalar(tensor, name=None, message=None):
    """Returns ``tensor``; ValueError unless its static shape is a scalar's."""
    with _ops.name_scope(name, "assert_scalar", [tensor]) as scope:
        tensor = _to_tensor(tensor, scope)
        if tensor.shape.ndims != 0:
            raise ValueError(f"{message or ''}Expected scalar shape for {tensor.name}, saw "
                             f"shape: {tensor.shape}.")
        return tensor


def assert_proper_iterable(values):
    """TypeError when ``values`` is a tensor, an array or a string instead of a list of
    them (an easy mistake in the ``data`` of an assert)."""
    unintentional = (_ops.Tensor, np.ndarray, bytes, str)
    if isinstance(values, unintentional):
        raise TypeError(f"Expected argument \"values\" to be a \"proper\" iterable.  Found: "
                        f"{type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument \"values\" to be iterable.  Found: {type(values)}")


def assert_same_float_dtype(tensors=None, dtype=None):
    """The common floating dtype of ``tensors`` (and ``dtype``); ValueError when they
    differ or are not floating, float32 when there are none."""
    found = dtypes.as_dtype(dtype) if dtype is not None else None
    for t in tensors or []:
        if found is None:
            found = t.dtype.base_dtype
        elif t.dtype.base_dtype != found:
            raise ValueError(f"{t.name}, type={t.dtype.base_dtype.name}: expected {found.name}.")
    if found is None:
        return dtypes.float32
    if not found.is_floating:
        raise ValueError(f"Expected floating point type, got {found}.")
    return found


def is_numeric_tensor(tensor):
    """Whether ``tensor`` is a Tensor of a numeric dtype."""
    return isinstance(tensor, _ops.Tensor) and tensor.dtype.is_numeric


def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """``t`` after a check_numerics that fails the step on NaN or Inf."""
    t = x if t is None else t
    msg = message if msg is None else msg
    with _ops.name_scope(name, "VerifyFinite", [t]):
        t = _to_tensor(t, "t")
        with _ops.colocate_with(t):
            checked = check_numerics(t, message=msg)
            return with_dependencies([checked], t)


def _dimension_sizes(x):
    """x's dimension sizes, ints where static, else scalar tensors (a scalar counts as
    one dimension of size 1)."""
    rank = x.shape.ndims
    if rank == 0:
        return (1,)
    dynamic = array_ops.shape(x)
    if rank is not None:
        return [d if d is not None else dynamic[i] for i, d in enumerate(x.shape.as_list())]
    # Unknown rank: TF picks [1] or the shape with a cond; the same as one slice here.
    from .array_ops import concat
    padded = concat([dynamic, [1]], 0)
    return _DynamicSizes(padded[:math_ops.maximum(array_ops.rank(x), 1)])


class _DynamicSizes:
    """Indexes a shape tensor of unknown length like a list."""

    def __init__(self, shape):
        self._shape = shape

    def __getitem__(self, i):
        return self._shape[i]


def _known(size):
    try:
        int(size)
    except (TypeError, ValueError):
        return False
    return size is not None and not isinstance(size, _ops.Tensor)


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Asserts shapes and shared dimension sizes: ``shapes`` maps (or pairs) tensors to
    specs like ``("N", "Q")``; an int is an exact size, a string a size shared by every
    tensor that names it, None or "." any size; a leading ``...`` or "*" leaves outer
    dimensions free; a scalar counts as shape (1,). Static violations raise ValueError;
    the rest is checked when the returned op runs."""
    if isinstance(shapes, dict):
        shapes = shapes.items()
    message = message or ""
    shapes = list(shapes)
    with _ops.name_scope(name, "assert_shapes", [t for t, _ in shapes] + list(data or [])):
        specs = []
        for tensor, spec in shapes:
            if spec is None:
                continue
            tensor = _ops.convert_to_tensor(tensor)
            if not (hasattr(spec, "__iter__") or hasattr(spec, "__getitem__")):
                raise ValueError(f"{message}.  Tensor {tensor.name}.  Specified shape must be an "
                                 "iterable.  An iterable has the attribute `__iter__` or "
                                 f"`__getitem__`.  Received specified shape: {spec}")
            spec = tuple(spec)
            for i, symbol in enumerate(spec):
                if (symbol is Ellipsis or symbol == "*") and i != 0:
                    raise ValueError(f"{message}.  Tensor {tensor.name} specified shape index {i}.  "
                                     "Symbol `...` or `*` for a variable number of unspecified "
                                     "dimensions is only allowed as the first entry")
            inner = bool(spec) and (spec[0] is Ellipsis or spec[0] == "*")
            sized = (spec[1:] if inner else spec) or (1,)
            specs.append((tensor, inner, _dimension_sizes(tensor), sized))

        rank_checks = []
        for tensor, inner, _, sized in specs:
            rank = len(sized)
            if inner:
                if rank > 1:
                    rank_checks.append(assert_rank_at_least(tensor, rank, data=data,
                                                            summarize=summarize, message=message))
            elif rank == 1:
                rank_checks.append(assert_rank_in(tensor, [0, 1], data=data,
                                                  summarize=summarize, message=message))
            else:
                rank_checks.append(assert_rank(tensor, rank, data=data, summarize=summarize,
                                               message=message))

        size_checks, named = [], {}
        for tensor, inner, actual, sized in specs:
            for i, symbol in enumerate(sized):
                if symbol is None or symbol == ".":
                    continue
                dim = i - len(sized) if inner else i
                if symbol not in named and not _known(symbol):
                    named[symbol] = (actual[dim], tensor, dim)
                    continue
                if _known(symbol):
                    want, how = int(symbol), "Specified explicitly"
                else:
                    want, by, at = named[symbol]
                    how = f"Specified by tensor {by.name} dimension {at}"
                got = actual[dim]
                if _known(got) and _known(want):
                    if int(got) != int(want):
                        raise ValueError(f"{message}.  {how}.  Tensor {tensor.name} dimension {dim} "
                                         f"must have size {int(want)}.  Received size {int(got)}, "
                                         f"shape {tensor.shape}")
                    continue
                shown = data if data is not None else [
                    message, how, f"Tensor {tensor.name} dimension", dim, "must have size",
                    want, "Received shape: ", array_ops.shape(tensor)]
                size_checks.append(Assert(math_ops.equal(_to_tensor(got, None),
                                                         _to_tensor(want, None)),
                                          shown, summarize=summarize))
        with _ops.control_dependencies(rank_checks):
            from .control_flow_ops import group
            return group(size_checks)
