"""Special functions (lgamma, digamma, polygamma, erfc, lbeta), rint, the zero-safe
products xlogy and multiply_no_nan, and the monotonicity checks, with TF's gradients."""
from __future__ import annotations

import math

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from . import math_ops as M
from .common import broadcast_infer, convert, convert_same, same_as_input
from .math_grad import _binary_grads

# xlogy and multiply_no_nan are tf.math names only, as in TF1.
__all__ = ["lgamma", "digamma", "polygamma", "erfc", "lbeta", "rint", "is_non_decreasing",
           "is_strictly_increasing"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)

for _op in ("Lgamma", "Digamma", "Erfc", "Rint"):
    register_op(_op)(same_as_input)
for _op in ("Polygamma", "Xlogy", "MulNoNan"):
    register_op(_op)(broadcast_infer)


def _float(t, op_type):
    if t.dtype not in _FLOATS:
        raise TypeError(f"Value passed to parameter 'x' of {op_type} has DataType {t.dtype.name} not "
                        "in list of allowed values: float16, float32, float64")
    return t


def _unary(op_type, doc):
    def fn(x, name=None):
        with _ops.name_scope(name, op_type, [x]) as scope:
            x = _float(convert(x, "x"), op_type)
            return _ops.make_tensor(op_type, [x], {"T": x.dtype}, name=scope)
    fn.__name__, fn.__doc__ = op_type.lower(), doc
    return fn


def _binary(op_type, doc, names=("x", "y")):
    def fn(x, y, name=None):
        with _ops.name_scope(name, op_type, [x, y]) as scope:
            x, y = convert_same([x, y], op_type, names=names)
            _float(x, op_type)
            return _ops.make_tensor(op_type, [x, y], {"T": x.dtype}, name=scope)
    fn.__doc__ = doc
    return fn


lgamma = _unary("Lgamma", "log(|Gamma(x)|) elementwise.")
digamma = _unary("Digamma", "psi(x) = d lgamma(x) / dx elementwise.")
erfc = _unary("Erfc", "1 - erf(x), accurate where erf(x) is close to 1.")
_polygamma = _binary("Polygamma", "", names=("a", "x"))
xlogy = _binary("Xlogy", "x * log(y), and 0 where x == 0 (whatever y is).")
multiply_no_nan = _binary("MulNoNan", "x * y, and 0 where y == 0 (even if x is inf or nan).")


rint = _unary("Rint", "x rounded to the nearest integer, halves to even.")


def lbeta(x, name=None):
    """log(|Beta(x)|) over the last dimension: sum(lgamma(x)) - lgamma(sum(x))."""
    from .reduction_ops import reduce_sum

    with _ops.name_scope(name, "lbeta", [x]):
        x = convert(x, "x")
        return reduce_sum(lgamma(x), axis=[-1]) - lgamma(reduce_sum(x, axis=[-1]))


def _monotonic(x, compare, name, default_name):
    from . import array_ops as A
    from .reduction_ops import reduce_all

    with _ops.name_scope(name, default_name, [x]):
        x = A.reshape(convert(x, "x"), [-1])
        if not x.dtype.is_numeric:
            raise TypeError(f"Expected x to be numeric, got {x.dtype.name}")
        return reduce_all(compare(x[1:], x[:-1]))


def is_non_decreasing(x, name=None):
    """True when each entry of ``x`` (flattened) is >= the one before (also for < 2 entries)."""
    return _monotonic(x, M.greater_equal, name, "is_non_decreasing")


def is_strictly_increasing(x, name=None):
    """True when each entry of ``x`` (flattened) is > the one before (also for < 2 entries)."""
    return _monotonic(x, M.greater, name, "is_strictly_increasing")


def polygamma(a, x, name=None):
    """The a-th derivative of digamma at x (a a non-negative integer, as a float tensor)."""
    return _polygamma(a, x, name)


# -- gradients (TF's rules) ----------------------------------------------------------------
RegisterGradient("Rint")(lambda op, grad: [None])


@RegisterGradient("Lgamma")
def _lgamma_grad(op, grad):
    return [grad * digamma(op.inputs[0])]


@RegisterGradient("Digamma")
def _digamma_grad(op, grad):
    x = op.inputs[0]
    return [grad * polygamma(M.cast(1, x.dtype), x)]


@RegisterGradient("Polygamma")
def _polygamma_grad(op, grad):
    a, x = op.inputs
    return _binary_grads(op, None, grad * polygamma(a + M.cast(1, a.dtype), x))


@RegisterGradient("Erfc")
def _erfc_grad(op, grad):
    x = op.inputs[0]
    return [grad * M.cast(-2.0 / math.sqrt(math.pi), x.dtype) * M.exp(-M.square(x))]


@RegisterGradient("Xlogy")
def _xlogy_grad(op, grad):
    x, y = op.inputs
    not_zero_x = M.cast(M.not_equal(x, M.cast(0, x.dtype)), x.dtype)
    return _binary_grads(op, grad * xlogy(not_zero_x, y), grad * M.xdivy(x, y))


@RegisterGradient("MulNoNan")
def _mul_no_nan_grad(op, grad):
    x, y = op.inputs
    return _binary_grads(op, multiply_no_nan(grad, y), multiply_no_nan(x, grad))

MATH_API = __all__ + ["multiply_no_nan", "xlogy"]  # tf.math's; those two only there in TF 1.15
