"""Dense linear algebra over batches of square matrices: matrix_inverse, matrix_determinant,
log_matrix_determinant (slogdet), cholesky, matrix_solve, matrix_triangular_solve, plus
matrix_transpose, logdet, norm and cross, with TF's gradients."""
from __future__ import annotations

import collections
import numbers

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops as A
from .array_ops import _apply, _shape_error, _who
from .common import convert
from .linalg_ops import matmul
from .shape_checks import rank_error

__all__ = ["matrix_inverse", "matrix_determinant", "cholesky", "matrix_solve",
           "matrix_triangular_solve", "matrix_transpose", "log_matrix_determinant", "norm", "cross"]

_FLOATS = (dtypes.float32, dtypes.float64)


def _square_dims(t, op_type, attrs, inputs, what="input"):
    """Static dims of a batch of square matrices (None when the rank is unknown)."""
    dims = t.shape.as_tuple_or_none()
    if dims is None:
        return None
    if len(dims) < 2:
        raise rank_error(op_type, attrs, inputs, 2, len(dims), at_least=True)
    m, n = dims[-2:]
    if m is not None and n is not None and m != n:
        raise _shape_error(_who(op_type, attrs), inputs, f"Dimensions must be equal, but are {m} and {n}")
    return dims


def _square_infer(op_type):
    def infer(inputs, attrs):
        _square_dims(inputs[0], op_type, attrs, inputs)
        return [(inputs[0].dtype, inputs[0].shape)]
    return infer


def _batch_infer(op_type, n_out):
    def infer(inputs, attrs):
        dims = _square_dims(inputs[0], op_type, attrs, inputs)
        shape = unknown_shape() if dims is None else TensorShape(dims[:-2])
        return [(inputs[0].dtype, shape)] * n_out
    return infer


def _solve_infer(op_type):
    def infer(inputs, attrs):
        a, b = inputs
        dims, bdims = _square_dims(a, op_type, attrs, inputs, "matrix"), b.shape.as_tuple_or_none()
        if bdims is not None and len(bdims) < 2:
            raise rank_error(op_type, attrs, inputs, 2, len(bdims), at_least=True)
        if dims is not None and bdims is not None and None not in (dims[-1], bdims[-2]) \
                and dims[-1] != bdims[-2]:
            raise _shape_error(_who(op_type, attrs), inputs, f"Dimensions must be equal, but are "
                               f"{dims[-1]} and {bdims[-2]}")
        return [(b.dtype, b.shape)]
    return infer


register_op("MatrixInverse")(_square_infer("MatrixInverse"))
register_op("Cholesky")(_square_infer("Cholesky"))
register_op("MatrixDeterminant")(_batch_infer("MatrixDeterminant", 1))
register_op("LogMatrixDeterminant")(_batch_infer("LogMatrixDeterminant", 2))
register_op("MatrixSolve")(_solve_infer("MatrixSolve"))
register_op("MatrixTriangularSolve")(_solve_infer("MatrixTriangularSolve"))


@register_op("Cross")
def _cross_infer(inputs, attrs):
    a, b = inputs
    if not a.shape.is_compatible_with(b.shape):
        raise _shape_error(_who("Cross", attrs), inputs, "Dimensions must be equal")
    shape = a.shape.merge_with(b.shape)
    last = shape.as_tuple_or_none()[-1] if shape.ndims else None
    if shape.ndims == 0 or last not in (None, 3):
        raise _shape_error(_who("Cross", attrs), inputs, "Dimension must be 3")
    return [(a.dtype, shape)]


def _float_input(t, arg, op_type):
    if t.dtype not in _FLOATS:
        raise TypeError(f"Value passed to parameter '{arg}' of {op_type} has DataType {t.dtype.name} "
                        "not in list of allowed values: float32, float64")
    return t


def _unary(op_type, x, name, **attrs):
    return _apply(op_type, name, [(x, "input", None)],
                  lambda t: {"T": _float_input(t, "input", op_type).dtype, **attrs}).outputs


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    """The inverse of each square matrix of ``input`` (of its adjoint when ``adjoint``);
    InvalidArgumentError at run time for a singular one."""
    return _unary("MatrixInverse", input, name, adjoint=bool(adjoint))[0]


def matrix_determinant(input, name=None):  # noqa: A002
    """The determinant of each square matrix of ``input``."""
    return _unary("MatrixDeterminant", input, name)[0]


LogMatrixDeterminant = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


def log_matrix_determinant(input, name=None):  # noqa: A002
    """(sign, log|det|) of each square matrix of ``input`` (tf.linalg.slogdet)."""
    return LogMatrixDeterminant(*_unary("LogMatrixDeterminant", input, name))


def cholesky(input, name=None):  # noqa: A002
    """The lower-triangular L with L L^T = input for each symmetric positive definite matrix
    (only the lower triangle of ``input`` is read)."""
    return _unary("Cholesky", input, name)[0]


def _solve(op_type, matrix, rhs, name, **attrs):
    from .common import convert_same

    with _ops.name_scope(name, op_type, [matrix, rhs]) as scope:
        a, b = convert_same([matrix, rhs], op_type, names=("matrix", "rhs"))
        _float_input(a, "matrix", op_type)
        return _ops.make_tensor(op_type, [a, b], {"T": a.dtype, **attrs}, name=scope)


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    """X with matrix @ X = rhs (adjoint(matrix) @ X = rhs when ``adjoint``), per batch entry."""
    return _solve("MatrixSolve", matrix, rhs, name, adjoint=bool(adjoint))


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    """X with matrix @ X = rhs, reading only the lower (or upper) triangle of ``matrix``."""
    return _solve("MatrixTriangularSolve", matrix, rhs, name, lower=bool(lower), adjoint=bool(adjoint))


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Transposes the last two dimensions of ``a``."""
    with _ops.name_scope(name, values=[a]):
        a = convert(a, "a")
        nd = a.shape.ndims
        if nd is None:
            raise ValueError("matrix_transpose needs an input of known rank")
        if nd < 2:
            raise ValueError(f"Argument `a` should be a (batch) matrix with rank >= 2.  Received `a` = {a} "
                             f"with shape: {a.shape}")
        return A.transpose(a, list(range(nd - 2)) + [nd - 1, nd - 2])


def logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive definite matrices, via their Cholesky factor."""
    from .math_ops import log
    from .matrix_ops import matrix_diag_part
    from .reduction_ops import reduce_sum

    with _ops.name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        return 2.0 * reduce_sum(log(matrix_diag_part(chol)), axis=[-1])


def cross(a, b, name=None):
    """The cross products of the 3-vectors along the last dimension of ``a`` and ``b``."""
    from .common import convert_same

    with _ops.name_scope(name, "Cross", [a, b]) as scope:
        a, b = convert_same([a, b], "Cross", names=("a", "b"))
        return _ops.make_tensor("Cross", [a, b], {"T": a.dtype}, name=scope)


def _norm_axis(axis, ord):  # noqa: A002 - TF's argument name
    """(axis as a tuple or None, whether it is a matrix norm), after TF's checks."""
    if isinstance(axis, (tuple, list)) and len(axis) == 2:
        axis = tuple(axis)
        if not all(isinstance(a, numbers.Integral) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        supported = ["euclidean", "fro", 1, 2, np.inf]
        if ord not in supported:
            raise ValueError(f"'ord' must be a supported matrix norm in {supported}, got {ord}")
        if ord in (2, 2.0):
            raise NotImplementedError("norm with ord=2 over two axes (the spectral norm) needs an "
                                      "SVD, which is not supported")
        return axis, True
    if not (isinstance(axis, numbers.Integral) or axis is None):
        raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
    if ord not in ["euclidean", 1, 2, np.inf] and (not np.isreal(ord) or isinstance(ord, str) or ord <= 0):
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    return (None if axis is None else (axis,)), False


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None, keep_dims=None):  # noqa: A002
    """Vector norms (euclidean, 1, inf, any p > 0) over ``axis`` (all entries when None) and
    matrix norms ('fro'/'euclidean', 1, inf) over a pair of axes, as TF composes them."""
    from .math_ops import abs as abs_, pow as pow_, sqrt
    from .reduction_ops import reduce_max, reduce_sum

    if keepdims is not None and keep_dims is not None and keepdims != keep_dims:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    keepdims = bool(keepdims if keepdims is not None else keep_dims)
    axis, is_matrix = _norm_axis(axis, ord)
    with _ops.name_scope(name, "norm", [tensor]):
        tensor = convert(tensor, "tensor")
        axes = None if axis is None else list(axis)
        if ord in ("fro", "euclidean", 2, 2.0):
            result = sqrt(reduce_sum(tensor * tensor, axes, keepdims=True))
        else:
            result = abs_(tensor)
            if ord == 1:
                result = reduce_sum(result, None if axis is None else axis[0], keepdims=True)
                if is_matrix:
                    result = reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if is_matrix:
                    result = reduce_sum(result, axis[1], keepdims=True)
                result = reduce_max(result, None if axis is None else axis[0], keepdims=True)
            else:
                result = pow_(reduce_sum(pow_(result, ord), axes, keepdims=True), 1.0 / ord)
        if not keepdims:
            result = A.squeeze(result, axes)
        return result


# -- gradients (TF's rules, for non-broadcast batch shapes) ---------------------------------
@RegisterGradient("MatrixInverse")
def _matrix_inverse_grad(op, grad):
    ainv, adj = op.outputs[0], op.get_attr("adjoint")
    return [-matmul(ainv, matmul(grad, ainv, adjoint_a=adj, adjoint_b=not adj), adjoint_a=not adj)]


def _times_adjoint_inverse(op, scale):
    """scale[..., None, None] * inverse(adjoint(a)): d det / d a is det * a^-T."""
    multipliers = A.expand_dims(A.expand_dims(scale, -1), -1)
    return multipliers * matrix_inverse(op.inputs[0], adjoint=True)


@RegisterGradient("MatrixDeterminant")
def _matrix_determinant_grad(op, grad):
    return [_times_adjoint_inverse(op, grad * op.outputs[0])]


@RegisterGradient("LogMatrixDeterminant")
def _log_matrix_determinant_grad(op, grad_sign, grad_log_abs):
    return [_times_adjoint_inverse(op, grad_log_abs)]


@RegisterGradient("Cholesky")
def _cholesky_grad(op, grad):
    from .matrix_ops import eye, matrix_band_part, matrix_diag_part, matrix_set_diag

    l = op.outputs[0]  # noqa: E741 - the factor's usual name
    dims = l.shape.as_tuple_or_none()
    if dims is not None and None not in dims:
        n, batch = dims[-1], list(dims[:-2])
    else:
        s = A.shape(l)
        n, batch = s[-1], s[:-2]
    l_inverse = matrix_triangular_solve(l, eye(n, batch_shape=batch, dtype=l.dtype))
    middle = matmul(l, grad, adjoint_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = matmul(matmul(l_inverse, middle, adjoint_a=True), l_inverse)
    grad_a += matrix_transpose(grad_a)
    return [grad_a * 0.5]


def _solve_grads(op, grad, solve_adjoint):
    c, adj = op.outputs[0], op.get_attr("adjoint")
    grad_b = solve_adjoint(not adj)
    grad_a = -matmul(c, grad_b, adjoint_b=True) if adj else -matmul(grad_b, c, adjoint_b=True)
    return grad_a, grad_b


@RegisterGradient("MatrixSolve")
def _matrix_solve_grad(op, grad):
    return list(_solve_grads(op, grad, lambda adj: matrix_solve(op.inputs[0], grad, adjoint=adj)))


@RegisterGradient("MatrixTriangularSolve")
def _matrix_triangular_solve_grad(op, grad):
    from .matrix_ops import matrix_band_part

    lower = op.get_attr("lower")
    grad_a, grad_b = _solve_grads(op, grad, lambda adj: matrix_triangular_solve(
        op.inputs[0], grad, lower=lower, adjoint=adj))
    grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
    return [grad_a, grad_b]


@RegisterGradient("Cross")
def _cross_grad(op, grad):
    u, v = op.inputs
    return [cross(v, grad), cross(grad, u)]
