"""Matrix decompositions: qr, self_adjoint_eig / self_adjoint_eigvals (tf.linalg.eigh,
eigvalsh) and svd, over batches of real matrices, with TF's gradients."""
from __future__ import annotations

import collections

from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops as A
from . import math_ops as M
from .array_ops import _apply
from .linalg_ops import matmul
from .linalg_solve_ops import _float_input, _square_dims, matrix_transpose, matrix_triangular_solve
from .matrix_ops import matrix_band_part, matrix_diag, matrix_diag_part, matrix_set_diag
from .shape_checks import rank_error

__all__ = ["qr", "self_adjoint_eig", "self_adjoint_eigvals", "svd"]


def _matrix_dims(t, op_type, attrs, inputs):
    dims = t.shape.as_tuple_or_none()
    if dims is not None and len(dims) < 2:
        raise rank_error(op_type, attrs, inputs, 2, len(dims), at_least=True)
    return dims


def _min_dim(m, n):
    return None if m is None or n is None else min(m, n)


def _decomposition_infer(op_type, n_out, shapes):
    """Shape function from ``shapes(batch, m, n, attrs)`` -> output dims lists; unknown
    shapes when the input's rank is."""
    def infer(inputs, attrs):
        x = inputs[0]
        dims = _matrix_dims(x, op_type, attrs, inputs)
        if dims is None:
            return [(x.dtype, unknown_shape())] * n_out
        return [(x.dtype, TensorShape(d)) for d in shapes(list(dims[:-2]), *dims[-2:], attrs)]
    return infer


def _qr_shapes(batch, m, n, attrs):
    p = m if attrs["full_matrices"] else _min_dim(m, n)
    return [batch + [m, p], batch + [p, n]]


register_op("Qr")(_decomposition_infer("Qr", 2, _qr_shapes))


@register_op("SelfAdjointEigV2")
def _eig_infer(inputs, attrs):
    x = inputs[0]
    dims = _square_dims(x, "SelfAdjointEigV2", attrs, inputs)
    if dims is None:
        return [(x.dtype, unknown_shape())] * 2
    n = dims[-1] if dims[-1] is not None else dims[-2]
    v = TensorShape(list(dims[:-2]) + [n, n]) if attrs["compute_v"] else TensorShape([0])
    return [(x.dtype, TensorShape(list(dims[:-2]) + [n])), (x.dtype, v)]


def _svd_shapes(batch, m, n, attrs):
    p = _min_dim(m, n)
    if not attrs["compute_uv"]:
        return [batch + [p], [0], [0]]
    full = attrs["full_matrices"]
    return [batch + [p], batch + [m, m if full else p], batch + [n, n if full else p]]


register_op("Svd")(_decomposition_infer("Svd", 3, _svd_shapes))


def _decompose(op_type, x, name, **attrs):
    return _apply(op_type, name, [(x, "input", None)],
                  lambda t: {"T": _float_input(t, "input", op_type).dtype, **attrs}).outputs


Qr = collections.namedtuple("Qr", ["q", "r"])


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """(q, r) with input = q r, q orthonormal columns, r upper triangular (q square and r
    with all rows when ``full_matrices``)."""
    return Qr(*_decompose("Qr", input, name, full_matrices=bool(full_matrices)))


def self_adjoint_eig(tensor, name=None):
    """(e, v): ascending eigenvalues and the eigenvectors (columns) of each symmetric
    matrix; only the lower triangle is read."""
    e, v = _decompose("SelfAdjointEigV2", tensor, name, compute_v=True)
    return e, v


def self_adjoint_eigvals(tensor, name=None):
    """The ascending eigenvalues of each symmetric matrix."""
    return _decompose("SelfAdjointEigV2", tensor, name, compute_v=False)[0]


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """(s, u, v) with tensor = u diag(s) v^T and s descending; only s when not
    ``compute_uv``. Note v, not its transpose, as in TF."""
    s, u, v = _decompose("Svd", tensor, name, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return (s, u, v) if compute_uv else s


# -- gradients (TF's rules, real dtypes) ---------------------------------------------------
def _safe_reciprocal(x, epsilon=1e-20):
    return x * M.reciprocal(x * x + epsilon)


def _pairwise_inverse_gaps(e):
    """f[..., i, j] = 1 / (e[j] - e[i]) off the diagonal, 0 on it."""
    return matrix_set_diag(_safe_reciprocal(A.expand_dims(e, -2) - A.expand_dims(e, -1)), A.zeros_like(e))


def _static_matrix_dims(t, what):
    dims = t.shape.as_tuple_or_none()
    if dims is None or None in dims[-2:]:
        raise NotImplementedError(f"the gradient of {what} needs static matrix dimensions, got {t.shape}")
    return dims[-2:]


@RegisterGradient("SelfAdjointEigV2")
def _eig_grad(op, grad_e, grad_v):
    e = op.outputs[0]
    if op.get_attr("compute_v"):
        v = op.outputs[1]
        f = _pairwise_inverse_gaps(e)
        grad_a = matmul(v, matmul(matrix_diag(grad_e) + f * matmul(v, grad_v, adjoint_a=True), v,
                                  adjoint_b=True))
    else:
        _, v = self_adjoint_eig(op.inputs[0])
        grad_a = matmul(v, matmul(matrix_diag(grad_e), v, adjoint_b=True))
    grad_a = matrix_band_part(grad_a + matrix_transpose(grad_a), -1, 0)
    return [matrix_set_diag(grad_a, 0.5 * matrix_diag_part(grad_a))]


def _triangular_solve_right(x, r):
    """matmul(x, adjoint(inverse(r))) for an upper-triangular r, without the inverse."""
    return matrix_transpose(matrix_triangular_solve(r, matrix_transpose(x), lower=False, adjoint=False))


def _qr_grad_deep(q, r, dq, dr):
    qdq = matmul(q, dq, adjoint_a=True)
    qdq_ = qdq - matrix_transpose(qdq)
    rdr = matmul(r, dr, adjoint_b=True)
    rdr_ = rdr - matrix_transpose(rdr)
    tril = matrix_band_part(qdq_ + rdr_, -1, 0)
    grad_a = matmul(q, dr + _triangular_solve_right(tril, r))
    grad_b = _triangular_solve_right(dq - matmul(q, qdq), r)
    return grad_a + grad_b


@RegisterGradient("Qr")
def _qr_grad(op, dq, dr):
    q, r = op.outputs
    rows, cols = _static_matrix_dims(r, "Qr")
    if rows > cols and q.shape.as_tuple_or_none()[-2] == q.shape.as_tuple_or_none()[-1]:
        raise NotImplementedError("QrGrad not implemented when nrows > ncols and full_matrices is true.")
    num_rows = q.shape.as_tuple_or_none()[-2]
    if num_rows >= cols:
        return [_qr_grad_deep(q, r, dq, dr)]
    a = op.inputs[0]
    y, u = a[..., :, num_rows:], r[..., :, :num_rows]
    dv, du = dr[..., :, num_rows:], dr[..., :, :num_rows]
    dy = matmul(q, dv)
    dx = _qr_grad_deep(q, u, dq + matmul(y, dv, adjoint_b=True), du)
    return [A.concat([dx, dy], axis=-1)]


@RegisterGradient("Svd")
def _svd_grad(op, grad_s, grad_u, grad_v):
    a = op.inputs[0]
    grad_s_mat = matrix_diag(grad_s)
    if not op.get_attr("compute_uv"):
        _, u, v = svd(a, compute_uv=True)
        return [matmul(u, matmul(grad_s_mat, v, adjoint_b=True))]
    full_matrices = op.get_attr("full_matrices")
    m, n = _static_matrix_dims(a, "Svd")
    s, u, v = op.outputs
    use_adjoint = m > n
    if use_adjoint:  # work on the adjoint so that m <= n
        m, n, u, v, grad_u, grad_v = n, m, v, u, grad_v, grad_u
    if full_matrices and abs(m - n) > 1:
        raise NotImplementedError(f"svd gradient is not implemented for abs(m - n) > 1 when "
                                  f"full_matrices is True (m={m}, n={n})")
    s_mat = matrix_diag(s)
    f = _pairwise_inverse_gaps(M.square(s))
    s_inv_mat = matrix_diag(_safe_reciprocal(s))
    v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
    f_u = f * matmul(u, grad_u, adjoint_a=True)
    f_v = f * matmul(v1, grad_v1, adjoint_a=True)
    term1_nouv = (grad_s_mat + matmul(f_u + matrix_transpose(f_u), s_mat)
                  + matmul(s_mat, f_v + matrix_transpose(f_v)))
    grad_a = matmul(u, matmul(term1_nouv, v1, adjoint_b=True))
    if m != n:
        gv1t = matrix_transpose(grad_v1)
        term2_nous = gv1t - matmul(matmul(gv1t, v1), v1, adjoint_b=True)
        if full_matrices:
            v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
            term2_nous -= matmul(matmul(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True)
        grad_a += matmul(matmul(u, s_inv_mat), term2_nous)
    return [matrix_transpose(grad_a) if use_adjoint else grad_a]
