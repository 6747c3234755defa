"""tf.linalg functions TF writes in Python over the matrix ops: cholesky_solve, matvec,
matrix_solve_ls (lstsq), pinv and matrix_rank; gradients come from the ops they use."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from . import array_ops as A
from . import math_ops as M
from .common import convert
from .linalg_decomp_ops import svd
from .linalg_ops import matmul
from .linalg_solve_ops import cholesky, matrix_triangular_solve
from .matrix_ops import eye

__all__ = ["cholesky_solve", "matrix_solve_ls"]


def cholesky_solve(chol, rhs, name=None):
    """X with A X = rhs, given A's Cholesky factor ``chol``: two triangular solves."""
    with _ops.name_scope(name, "cholesky_solve", [chol, rhs]):
        y = matrix_triangular_solve(chol, rhs, adjoint=False, lower=True)
        return matrix_triangular_solve(chol, y, adjoint=True, lower=True)


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    """a @ b for a (batch of) matrix a and vector b."""
    with _ops.name_scope(name, "MatVec", [a, b]):
        product = matmul(a, A.expand_dims(convert(b, "b"), -1), transpose_a=transpose_a,
                         adjoint_a=adjoint_a)
        return A.squeeze(product, axis=[-1])


def _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind):
    gramian = matmul(matrix, matrix, adjoint_a=first_kind, adjoint_b=not first_kind)
    if isinstance(l2_regularizer, _ops.Tensor) or l2_regularizer != 0:
        dims = gramian.shape.as_tuple_or_none()
        if dims is None or None in dims:
            raise NotImplementedError("matrix_solve_ls with l2_regularizer needs static matrix shapes")
        gramian += M.cast(l2_regularizer, matrix.dtype) * eye(dims[-1], batch_shape=list(dims[:-2]),
                                                              dtype=matrix.dtype)
    return cholesky(gramian)


def matrix_solve_ls(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """The least-squares solution of matrix @ X = rhs, through the Cholesky factor of the
    (regularized) Gram matrix, as TF's fast path; ``fast=False`` (complete orthogonal
    decomposition) is not supported."""
    if not fast:
        raise NotImplementedError("matrix_solve_ls with fast=False is not supported")
    with _ops.name_scope(name, "matrix_solve_ls", [matrix, rhs, l2_regularizer]):
        matrix = convert(matrix, "matrix")
        rhs = convert(rhs, "rhs", dtype=matrix.dtype)
        dims = matrix.shape.as_tuple_or_none()
        if dims is None or None in dims[-2:]:
            raise NotImplementedError("matrix_solve_ls needs static matrix dimensions")
        if dims[-2] >= dims[-1]:
            chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=True)
            return cholesky_solve(chol, matmul(matrix, rhs, adjoint_a=True))
        chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=False)
        return matmul(matrix, cholesky_solve(chol, rhs), adjoint_a=True)


lstsq = matrix_solve_ls


def _static_dims(a, what):
    dims = a.shape.as_tuple_or_none()
    if dims is None or None in dims[-2:]:
        raise NotImplementedError(f"{what} needs static matrix dimensions")
    return dims[-2:]


def pinv(a, rcond=None, validate_args=False, name=None):
    """The Moore-Penrose pseudo-inverse through the SVD; singular values at most
    rcond * max(s) (default 10 * max(m, n) * eps) count as zero."""
    from .reduction_ops import reduce_max

    with _ops.name_scope(name or "pinv"):
        a = convert(a, "a")
        m, n = _static_dims(a, "pinv")
        if rcond is None:
            rcond = 10.0 * max(m, n) * np.finfo(a.dtype.as_numpy_dtype).eps
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        cutoff = M.cast(rcond, a.dtype) * reduce_max(s, axis=-1)
        s = M.where(M.greater(s, A.expand_dims(cutoff, -1)), s, np.inf * A.ones_like(s))
        return matmul(v / A.expand_dims(s, -2), u, adjoint_b=True)


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """The number of singular values above ``tol`` (default eps * max(m, n) * max(s))."""
    from .reduction_ops import reduce_max, reduce_sum

    with _ops.name_scope(name or "matrix_rank"):
        a = convert(a, "a")
        s = svd(a, compute_uv=False)
        if tol is None:
            m, n = _static_dims(a, "matrix_rank")
            eps = np.finfo(a.dtype.as_numpy_dtype).eps
            tol = M.cast(eps * max(m, n), a.dtype) * reduce_max(s, axis=-1, keepdims=True)
        return reduce_sum(M.cast(M.greater(s, tol), dtypes.int32), axis=-1)
