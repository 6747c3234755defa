"""tf.linalg basics: inverse, determinants, cholesky, solves; values and gradients."""
import numpy as np

from tests.goldens.harness import case


def _weighted(tf, y, seed):
    w = np.asarray(np.random.RandomState(seed).randn(*y.shape.as_list()), y.dtype.as_numpy_dtype)
    return tf.reduce_sum(y * w)


@case(rtol=1e-4, atol=1e-5)
def inverse_and_determinants(tf):
    rng = np.random.RandomState(0)
    a = tf.constant((rng.randn(2, 3, 3) + 3 * np.eye(3)).astype(np.float32))
    out = {"inv": tf.linalg.inv(a), "inv_adj": tf.matrix_inverse(a, adjoint=True),
           "det": tf.linalg.det(a), "slogdet_sign": tf.linalg.slogdet(-a)[0],
           "slogdet_log": tf.linalg.slogdet(-a)[1]}
    for key in ("inv", "inv_adj", "det", "slogdet_log"):
        out[f"d_{key}"], = tf.gradients(_weighted(tf, out[key], 1), [a])
    return out


@case(rtol=1e-4, atol=1e-5)
def cholesky_and_solves(tf):
    rng = np.random.RandomState(1)
    x = tf.constant(rng.randn(2, 3, 3).astype(np.float64))
    spd = tf.matmul(x, x, transpose_b=True) + tf.eye(3, dtype=tf.float64)
    a = tf.constant((rng.randn(3, 3) + 3 * np.eye(3)).astype(np.float32))
    b = tf.constant(rng.randn(3, 2).astype(np.float32))
    out = {"chol": tf.cholesky(spd), "logdet": tf.linalg.logdet(spd),
           "solve": tf.matrix_solve(a, b), "solve_adj": tf.linalg.solve(a, b, adjoint=True),
           "tri_lower": tf.matrix_triangular_solve(a, b),
           "tri_upper_adj": tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
           "transpose": tf.linalg.matrix_transpose(x)}
    out["d_chol"], = tf.gradients(_weighted(tf, out["chol"], 2), [x])
    out["d_logdet"], = tf.gradients(tf.reduce_sum(out["logdet"]), [x])
    for key in ("solve", "solve_adj", "tri_lower", "tri_upper_adj"):
        out[f"d_{key}_a"], out[f"d_{key}_b"] = tf.gradients(_weighted(tf, out[key], 3), [a, b])
    return out


@case
def norms_and_cross(tf):
    rng = np.random.RandomState(2)
    x = tf.constant(rng.randn(2, 3, 4).astype(np.float32))
    u = tf.constant(rng.randn(4, 3).astype(np.float32))
    v = tf.constant(rng.randn(4, 3).astype(np.float32))
    out = {"all": tf.norm(x), "axis1": tf.norm(x, axis=1), "l1": tf.norm(x, ord=1, axis=-1),
           "linf_keep": tf.norm(x, ord=np.inf, axis=0, keepdims=True), "p3": tf.norm(x, ord=3, axis=2),
           "fro": tf.norm(x, ord="fro", axis=[1, 2]), "m1": tf.norm(x, ord=1, axis=(1, 2)),
           "minf": tf.linalg.norm(x, ord=np.inf, axis=(-2, -1)), "cross": tf.cross(u, v),
           "linalg_cross": tf.linalg.cross(v, u)}
    for key in ("all", "axis1", "l1", "p3", "fro", "m1", "minf"):
        out[f"d_{key}"], = tf.gradients(_weighted(tf, out[key], 4), [x])
    out["d_cross_u"], out["d_cross_v"] = tf.gradients(_weighted(tf, out["cross"], 5), [u, v])
    return out


@case(rtol=1e-4, atol=1e-4)
def decompositions(tf):
    """Factors are compared through sign-invariant functions: the sign of each eigen- or
    singular vector (and of each column of Q with its row of R) is the library's choice."""
    rng = np.random.RandomState(3)
    a = tf.constant(rng.randn(4, 3).astype(np.float64))
    sq = tf.constant(rng.randn(3, 3).astype(np.float64))
    sym = sq + tf.transpose(sq)
    e, v = tf.self_adjoint_eig(sym)
    s, u, w = tf.svd(a)
    q, r = tf.qr(a)
    q_full, r_full = tf.qr(tf.transpose(a), full_matrices=True)
    out = {"e": e, "v2": v * v, "eigvals": tf.self_adjoint_eigvals(sym), "s": s, "u2": u * u,
           "w2": w * w, "s_only": tf.svd(a, compute_uv=False), "q2": q * q, "r_abs": tf.abs(r),
           "q_full2": q_full * q_full, "r_full_abs": tf.abs(r_full)}
    out["d_e"], = tf.gradients(_weighted(tf, e, 6), [sq])
    out["d_v2"], = tf.gradients(_weighted(tf, out["v2"], 7), [sq])
    out["d_s"], = tf.gradients(_weighted(tf, s, 8), [a])
    out["d_uw"], = tf.gradients(_weighted(tf, out["u2"], 9) + _weighted(tf, out["w2"], 10), [a])
    out["d_qr"], = tf.gradients(_weighted(tf, out["q2"], 11) + _weighted(tf, r * r, 12), [a])
    return out


@case(rtol=1e-4, atol=1e-4)
def least_squares_pinv_rank(tf):
    rng = np.random.RandomState(4)
    a = tf.constant(rng.randn(5, 3).astype(np.float64))
    b = tf.constant(rng.randn(5, 2).astype(np.float64))
    low_rank = tf.matmul(a, tf.constant(rng.randn(3, 4)))
    spd = tf.matmul(a, a, transpose_a=True) + tf.eye(3, dtype=tf.float64)
    out = {"ls": tf.matrix_solve_ls(a, b), "ridge": tf.matrix_solve_ls(a, b, l2_regularizer=0.5),
           "under": tf.linalg.lstsq(tf.transpose(a), b[:3]),
           "chol_solve": tf.cholesky_solve(tf.cholesky(spd), b[:3]),
           "matvec": tf.linalg.matvec(a, b[:3, 0]), "pinv": tf.linalg.pinv(low_rank),
           "rank": tf.linalg.matrix_rank(low_rank)}
    out["d_ls_a"], out["d_ls_b"] = tf.gradients(_weighted(tf, out["ridge"], 13), [a, b])
    out["d_pinv"], = tf.gradients(_weighted(tf, tf.linalg.pinv(a), 14), [a])
    return out
