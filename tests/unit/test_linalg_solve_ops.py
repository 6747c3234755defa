"""matrix_inverse, determinants, cholesky, solves and the tf.linalg namespace."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

R = np.random.RandomState(0)
A = R.randn(2, 3, 3) + 3 * np.eye(3)
SPD = A @ np.swapaxes(A, -1, -2) + np.eye(3)
B = R.randn(2, 3, 2)


def test_values_match_numpy():
    cases = [
        (tf.matrix_inverse(A), np.linalg.inv(A)),
        (tf.linalg.inv(A, adjoint=True), np.linalg.inv(np.swapaxes(A, -1, -2))),
        (tf.matrix_determinant(A), np.linalg.det(A)),
        (tf.linalg.slogdet(-A).log_abs_determinant, np.linalg.slogdet(-A)[1]),
        (tf.linalg.slogdet(-A).sign, np.linalg.slogdet(-A)[0]),
        (tf.cholesky(SPD), np.linalg.cholesky(SPD)),
        (tf.linalg.logdet(SPD), np.linalg.slogdet(SPD)[1]),
        (tf.matrix_solve(A, B), np.linalg.solve(A, B)),
        (tf.linalg.solve(A, B, adjoint=True), np.linalg.solve(np.swapaxes(A, -1, -2), B)),
        (tf.matrix_triangular_solve(A, B), np.linalg.solve(np.tril(A), B)),
        (tf.linalg.triangular_solve(A, B, lower=False, adjoint=True),
         np.linalg.solve(np.swapaxes(np.triu(A), -1, -2), B)),
        (tf.linalg.matrix_transpose(B), np.swapaxes(B, -1, -2)),
    ]
    for t, want in cases:
        assert t.shape.as_list() == list(np.shape(want))
        np.testing.assert_allclose(run(t), want, rtol=1e-10, atol=1e-12)
        if t.op.type in ("MatrixInverse", "Cholesky", "MatrixSolve", "MatrixTriangularSolve"):
            check_against_reference(t)


def test_namespace_aliases():
    assert tf.linalg.det is tf.matrix_determinant and tf.linalg.band_part is tf.matrix_band_part
    assert tf.linalg.matmul is tf.matmul and tf.linalg.eye is tf.eye and tf.linalg.einsum is tf.einsum
    assert tf.linalg.diag is tf.matrix_diag and tf.linalg.set_diag is tf.matrix_set_diag


def test_errors():
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.matrix_inverse(np.ones((2, 3)))
    with pytest.raises(TypeError, match="float32, float64"):
        tf.matrix_determinant(np.eye(2, dtype=np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        run(tf.matrix_inverse(np.ones((2, 2))))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky decomposition was not successful"):
        run(tf.cholesky(-np.eye(2)))


@pytest.mark.parametrize("build", [
    lambda a, b: tf.matrix_inverse(a) * np.arange(18.0).reshape(2, 3, 3),
    lambda a, b: tf.matrix_inverse(a, adjoint=True) ** 2,
    lambda a, b: tf.matrix_determinant(a) ** 2,
    lambda a, b: tf.linalg.slogdet(a).log_abs_determinant,
    lambda a, b: tf.cholesky(tf.matmul(a, a, transpose_b=True) + np.eye(3)) * np.arange(9.0).reshape(3, 3),
    lambda a, b: tf.matrix_solve(a, b) ** 2,
    lambda a, b: tf.matrix_solve(a, b, adjoint=True) ** 2,
    lambda a, b: tf.matrix_triangular_solve(a, b) ** 2,
    lambda a, b: tf.matrix_triangular_solve(a, b, lower=False, adjoint=True) ** 2,
])
def test_gradients(build):
    check_gradient(build, [A, B], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kwargs,want", [
    ({}, np.linalg.norm(B.reshape(-1))),
    ({"axis": 1}, np.linalg.norm(B, axis=1)),
    ({"ord": 1, "axis": -1}, np.linalg.norm(B, ord=1, axis=-1)),
    ({"ord": np.inf, "axis": 0}, np.linalg.norm(B, ord=np.inf, axis=0)),
    ({"ord": 3, "axis": 1, "keepdims": True}, np.linalg.norm(B, ord=3, axis=1, keepdims=True)),
    ({"ord": "fro", "axis": [1, 2]}, np.linalg.norm(B, ord="fro", axis=(1, 2))),
    ({"ord": 1, "axis": (1, 2)}, np.linalg.norm(B, ord=1, axis=(1, 2))),
    ({"ord": np.inf, "axis": (-2, -1), "keep_dims": True}, np.linalg.norm(B, ord=np.inf, axis=(1, 2), keepdims=True)),
])
def test_norm(kwargs, want):
    out = tf.norm(B, **kwargs)
    assert out.shape.as_list() == list(np.shape(want))
    np.testing.assert_allclose(run(out), want, rtol=1e-12)


def test_norm_errors_and_cross():
    with pytest.raises(NotImplementedError, match="SVD"):
        tf.norm(B, ord=2, axis=[1, 2])
    with pytest.raises(ValueError, match="vector norm"):
        tf.norm(B, ord=-1)
    u, v = R.randn(4, 3), R.randn(4, 3)
    c = tf.cross(u, v)
    np.testing.assert_allclose(run(c), np.cross(u, v))
    check_against_reference(c)
    check_gradient(lambda a, b: tf.cross(a, b) * np.arange(12.0).reshape(4, 3), [u, v])
    check_gradient(lambda a, b: tf.norm(a, axis=1) + tf.norm(b, ord=1.5), [u, v])
    with pytest.raises(ValueError, match="Dimension must be 3"):
        tf.cross(B, B)
