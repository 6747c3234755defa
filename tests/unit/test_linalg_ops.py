"""matmul: MatMul and BatchMatMulV2 forward, gradients and TF's shape/dtype errors."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

RNG = np.random.default_rng(0)
TRANSPOSES = [(False, False), (False, True), (True, False), (True, True)]


def _operands(ta, tb, m=2, k=3, n=4, batch_a=(), batch_b=()):
    a = RNG.normal(size=batch_a + ((k, m) if ta else (m, k)))
    b = RNG.normal(size=batch_b + ((n, k) if tb else (k, n)))
    return a, b


def _np_matmul(a, b, ta, tb):
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_matmul_forward(ta, tb, dtype):
    a, b = (v.round().astype(dtype) if dtype == np.int32 else v.astype(dtype) for v in _operands(ta, tb))
    c = tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    assert c.op.type == "MatMul" and c.op.name == "MatMul"
    assert c.shape == tf.TensorShape([2, 4]) and c.dtype == tf.as_dtype(dtype)
    assert c.op.get_attr("transpose_a") == ta and c.op.get_attr("transpose_b") == tb
    np.testing.assert_allclose(check_against_reference(c), _np_matmul(a, b, ta, tb), rtol=1e-5)


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_adjoint_aliases(ta, tb):
    a, b = _operands(ta, tb)
    c = tf.matmul(a, b, adjoint_a=ta, adjoint_b=tb)
    np.testing.assert_allclose(run(c), _np_matmul(a, b, ta, tb), rtol=1e-10)


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
def test_matmul_gradient(ta, tb):
    a, b = _operands(ta, tb)
    check_gradient(lambda x, y: tf.matmul(x, y, transpose_a=ta, transpose_b=tb), [a, b])


@pytest.mark.parametrize("ta,tb", TRANSPOSES)
@pytest.mark.parametrize("batch_a,batch_b", [((3,), (3,)), ((2, 1), (3,)), ((), (2,)), ((2,), ())])
def test_batch_matmul(ta, tb, batch_a, batch_b):
    a, b = _operands(ta, tb, batch_a=batch_a, batch_b=batch_b)
    c = tf.matmul(a, b, adjoint_a=ta, adjoint_b=tb)
    want = _np_matmul(a, b, ta, tb)
    assert c.op.type == "BatchMatMulV2" and c.op.name == "MatMul"
    assert c.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(check_against_reference(c), want, rtol=1e-10)
    check_gradient(lambda x, y: tf.matmul(x, y, adjoint_a=ta, adjoint_b=tb), [a, b])


def test_matmul_operator_and_unknown_shapes():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.placeholder(tf.float32, [3, None])
    c = a @ b
    assert c.shape.as_list() == [None, None]
    av, bv = np.ones((2, 3), np.float32), np.ones((3, 5), np.float32)
    np.testing.assert_allclose(run(c, {a: av, b: bv}), av @ bv)
    d = tf.matmul(tf.placeholder(tf.float32), bv)
    assert d.op.type == "BatchMatMulV2"
    np.testing.assert_allclose(run(d, {d.op.inputs[0]: av}), av @ bv)


def test_inner_dimension_error():
    with pytest.raises(ValueError) as e:
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))
    assert str(e.value) == ("Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: 'MatMul') "
                            "with input shapes: [2,3], [4,5].")
    with pytest.raises(ValueError, match=r"but are 2 and 4 for 'layer/MatMul' \(op: 'MatMul'\)"):
        with tf.name_scope("layer"):
            tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]), transpose_a=True)
    with pytest.raises(ValueError, match=r"but are 3 and 4 .*\(op: 'BatchMatMulV2'\) .*\[7,2,3\], \[4,5\]"):
        tf.matmul(tf.zeros([7, 2, 3]), tf.zeros([4, 5]))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.matmul(tf.zeros([2, 2, 3]), tf.zeros([3, 3, 5]))


def test_rank_and_dtype_errors():
    with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 1 for 'MatMul'"):
        tf.matmul(tf.zeros([3]), tf.zeros([3, 4]))
    with pytest.raises(ValueError, match="Only one of transpose_a and adjoint_a can be True."):
        tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2]), transpose_a=True, adjoint_a=True)
    with pytest.raises(TypeError):
        tf.matmul(tf.zeros([2, 2]), tf.zeros([2, 2], tf.float64))
    with pytest.raises(TypeError, match="DataType bool not in list of allowed values"):
        tf.matmul([[True]], [[False]])


def test_runtime_size_mismatch_is_invalid_argument():
    a = tf.placeholder(tf.float32, [None, None])
    c = tf.matmul(a, np.ones((3, 2), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
        run(c, {a: np.ones((2, 4), np.float32)})
