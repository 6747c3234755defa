"""tensordot and einsum against numpy, with finite-difference gradients."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient, run

R = np.random.RandomState(0)
A, B, C, S = R.randn(2, 3, 4), R.randn(4, 5), R.randn(2, 4, 5), R.randn(3, 3)


@pytest.mark.parametrize("equation,operands", [
    ("ij,jk->ik", [A[0], B]), ("bij,bjk->bik", [A, C]), ("ij->ji", [B]), ("ij->", [B]),
    ("ij->j", [B]), ("i,j->ij", [B[0], B[1]]), ("i,i->", [B[0], B[1]]), ("bij,jk->bik", [A, B]),
    ("...ij,...jk->...ik", [A, C]), ("ij,jk,kl->il", [A[0], B, B.T]), ("bij,bkj->bik", [A, A]),
    ("ijk", [A]), ("ij,jk", [A[0], B]), ("ii->i", [S]), ("ii", [S]), ("bii->b", [A[:, :, :3]]),
    ("...ij,...jk->...ik", [A, B]), ("...ij,...jk->...ik", [A[:1], C]), ("...j,j->...", [A, B[:, 0]]),
    ("bi...,...->bi...", [A, A[0, 0]]), ("ij,ij->ij", [B, B]), ("abc,cd->abd", [A, B]), ("BTH,HD->BTD", [A, B]), ("aB,Bc", [A[0], B]),
])
def test_einsum_matches_numpy(equation, operands):
    out = tf.einsum(equation, *[tf.constant(o) for o in operands])
    want = np.einsum(equation, *operands)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(out), want, rtol=1e-10)


def test_einsum_errors():
    with pytest.raises(ValueError, match="2 inputs but 1"):
        tf.einsum("ij,jk->ik", B)
    with pytest.raises(ValueError, match="rank 2 but subscripts 'ijk'"):
        tf.einsum("ijk->i", B)
    with pytest.raises(ValueError, match="subscript 'j' has size 5 in one operand and 3"):
        tf.einsum("ij,jk->ik", B, A[0])
    with pytest.raises(ValueError, match="unsupported subscript"):
        tf.einsum("i1->i", B)


@pytest.mark.parametrize("axes,want", [
    (1, np.tensordot(A, B, 1)), ([[0, 2], [0, 1]], np.tensordot(A, C, [[0, 2], [0, 1]])),
    (0, np.tensordot(B[0], B[1], 0)),
])
def test_tensordot(axes, want):
    other = C if isinstance(axes, list) else (B if axes == 1 else B[1])
    out = tf.tensordot(A if axes != 0 else B[0], other, axes)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(out), want, rtol=1e-10)


def test_tensordot_unknown_dims():
    a = tf.placeholder(tf.float64, [None, 3, 4])
    out = tf.tensordot(a, B, [[2], [0]])
    np.testing.assert_allclose(run(out, {a: A}), np.tensordot(A, B, [[2], [0]]))
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.tensordot(A, B, [[1], [0]])


@pytest.mark.parametrize("build", [
    lambda a, b: tf.einsum("bij,jk->bik", a, b) ** 2,
    lambda a, b: tf.einsum("bij,bik->bjk", a, a) * tf.reduce_sum(b),
    lambda a, b: tf.einsum("ii", b[:, :4]) * tf.einsum("bij->j", a),
    lambda a, b: tf.tensordot(a, b, [[2], [0]]) ** 2,
    lambda a, b: tf.einsum("...ij,...jk->...ik", a[:1], tf.stack([b, 2 * b])) ** 2,
])
def test_gradients(build):
    check_gradient(build, [R.randn(2, 3, 4), R.randn(4, 5)])
