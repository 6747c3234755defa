"""Reference semantics of the dense linear-algebra ops over batches of square matrices:
MatrixInverse, MatrixDeterminant, LogMatrixDeterminant, Cholesky, MatrixSolve and
MatrixTriangularSolve; and Cross."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference


def _square(x, what="input"):
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise errors.InvalidArgumentError(None, None, f"{what} must be a batch of square matrices, "
                                          f"got shape {list(x.shape)}")


def _adjoint(x):
    return np.swapaxes(x, -1, -2)


def _rhs(a, b):
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise errors.InvalidArgumentError(None, None, f"Input matrix and right-hand side must have "
                                          f"the same number of rows: {list(a.shape)} vs. {list(b.shape)}")


@reference("MatrixInverse", host=True)
def _matrix_inverse(attrs, x):
    _square(x)
    a = _adjoint(x) if attrs.get("adjoint") else x
    try:
        return np.linalg.inv(a).astype(x.dtype)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(None, None, "Input is not invertible.") from None


@reference("MatrixDeterminant", host=True)
def _matrix_determinant(attrs, x):
    _square(x)
    return np.asarray(np.linalg.det(x), x.dtype)


@reference("LogMatrixDeterminant", host=True)
def _log_matrix_determinant(attrs, x):
    _square(x)
    sign, logdet = np.linalg.slogdet(x)
    return np.asarray(sign, x.dtype), np.asarray(logdet, x.dtype)


@reference("Cholesky", host=True)
def _cholesky(attrs, x):
    _square(x)
    # TF reads only the lower triangle: the upper one is taken as its mirror.
    lower = np.tril(x) + _adjoint(np.tril(x, -1))
    try:
        return np.linalg.cholesky(lower).astype(x.dtype)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(
            None, None, "Cholesky decomposition was not successful. The input might not be valid.") from None


@reference("MatrixSolve", host=True)
def _matrix_solve(attrs, a, b):
    _square(a, "matrix")
    _rhs(a, b)
    m = _adjoint(a) if attrs.get("adjoint") else a
    try:
        return np.linalg.solve(m, b).astype(b.dtype)
    except np.linalg.LinAlgError:
        raise errors.InvalidArgumentError(None, None, "Input matrix is not invertible.") from None


@reference("MatrixTriangularSolve", host=True)
def _matrix_triangular_solve(attrs, a, b):
    _square(a, "matrix")
    _rhs(a, b)
    tri = np.tril(a) if attrs.get("lower", True) else np.triu(a)
    m = _adjoint(tri) if attrs.get("adjoint") else tri
    diag = np.diagonal(tri, axis1=-2, axis2=-1)
    if (diag == 0).any():
        raise errors.InvalidArgumentError(None, None, "Input matrix is not invertible.")
    return np.linalg.solve(m, b).astype(b.dtype)


@reference("Cross", host=True)
def _cross(attrs, a, b):
    if a.shape != b.shape or a.ndim == 0 or a.shape[-1] != 3:
        raise errors.InvalidArgumentError(None, None, f"a and b must have the same shape ending in 3, "
                                          f"got {list(a.shape)} and {list(b.shape)}")
    return np.cross(a, b).astype(a.dtype)
