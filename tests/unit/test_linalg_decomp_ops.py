"""qr, self_adjoint_eig(vals) and svd: reconstructions, shapes and finite-difference
gradients of sign-invariant functions of the factors."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient, run

R = np.random.RandomState(0)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_qr_and_svd_reconstruct(shape, full):
    a = R.randn(*shape)
    q, r = tf.qr(a, full_matrices=full)
    s, u, v = tf.svd(a, full_matrices=full)
    Q, Rm, S, U, V = run([q, r, s, u, v])
    assert [q.shape.as_list(), r.shape.as_list()] == [list(Q.shape), list(Rm.shape)]
    assert [s.shape.as_list(), u.shape.as_list(), v.shape.as_list()] == [list(S.shape), list(U.shape), list(V.shape)]
    np.testing.assert_allclose(Q @ Rm, a, atol=1e-12)
    np.testing.assert_allclose(np.triu(Rm), Rm)
    p = min(shape[-2:])
    np.testing.assert_allclose(U[..., :p] * S[..., None, :] @ np.swapaxes(V[..., :p], -1, -2), a, atol=1e-12)
    np.testing.assert_allclose(S, np.linalg.svd(a, compute_uv=False))
    np.testing.assert_allclose(run(tf.svd(a, compute_uv=False)), S)


def test_eigh():
    x = R.randn(2, 3, 3)
    sym = x + np.swapaxes(x, -1, -2)
    e, v = tf.self_adjoint_eig(sym)
    E, V = run([e, v])
    np.testing.assert_allclose(E, np.linalg.eigvalsh(sym))
    np.testing.assert_allclose(V * E[..., None, :] @ np.swapaxes(V, -1, -2), sym, atol=1e-12)
    np.testing.assert_allclose(run(tf.linalg.eigvalsh(sym)), E)
    assert tf.linalg.eigh is tf.self_adjoint_eig


W3 = R.randn(3, 3)


@pytest.mark.parametrize("build,shape", [
    (lambda a: tf.self_adjoint_eig(a + tf.transpose(a))[0] * [1.0, 2.0, 3.0], (3, 3)),
    (lambda a: tf.self_adjoint_eig(a + tf.transpose(a))[1] ** 2 * W3, (3, 3)),
    (lambda a: tf.linalg.eigvalsh(a + tf.transpose(a)) ** 2, (3, 3)),
    (lambda a: tf.svd(a, compute_uv=False) * [1.0, 2.0, 3.0], (3, 4)),
    (lambda a: tf.svd(a)[1] ** 2 * W3 + tf.reduce_sum(tf.svd(a)[2] ** 2), (3, 4)),
    (lambda a: tf.svd(a)[2] ** 2 * W3, (5, 3)),
    (lambda a: tf.qr(a)[0] ** 2 * W3[:, :3] + tf.reduce_sum(tf.qr(a)[1] ** 2 * W3), (3, 3)),
    (lambda a: tf.qr(a)[0] ** 2 * R.randn(4, 3), (4, 3)),
    (lambda a: tf.qr(a)[1] ** 2 * R.randn(3, 5), (3, 5)),
])
def test_gradients(build, shape):
    check_gradient(build, [np.random.RandomState(7).randn(*shape)], rtol=1e-3, atol=1e-4)


def test_composites():
    a = R.randn(5, 3)
    b = R.randn(5, 2)
    spd = a.T @ a + np.eye(3)
    np.testing.assert_allclose(run(tf.linalg.cholesky_solve(np.linalg.cholesky(spd), b[:3])),
                               np.linalg.solve(spd, b[:3]))
    np.testing.assert_allclose(run(tf.linalg.matvec(a, b[:3, 0])), a @ b[:3, 0])
    np.testing.assert_allclose(run(tf.matrix_solve_ls(a, b)), np.linalg.lstsq(a, b, rcond=None)[0])
    np.testing.assert_allclose(run(tf.linalg.lstsq(a.T, b[:3])), np.linalg.pinv(a.T) @ b[:3], atol=1e-10)
    ridge = np.linalg.solve(a.T @ a + 0.5 * np.eye(3), a.T @ b)
    np.testing.assert_allclose(run(tf.matrix_solve_ls(a, b, l2_regularizer=0.5)), ridge)
    low_rank = a @ R.randn(3, 4)
    np.testing.assert_allclose(run(tf.linalg.pinv(low_rank)), np.linalg.pinv(low_rank), atol=1e-10)
    assert run(tf.linalg.matrix_rank(low_rank)) == 3
    with pytest.raises(NotImplementedError, match="fast=False"):
        tf.matrix_solve_ls(a, b, fast=False)
    check_gradient(lambda m, r: tf.matrix_solve_ls(m, r) ** 2, [a, b])
