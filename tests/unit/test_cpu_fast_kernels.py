"""The lean CPU kernels of the training-step ops (dtf.kernels.cpu.array, .math, Cast, Relu,
ReluGrad, sparse softmax cross-entropy, ApplyGradientDescent, AssignAdd) against the numpy
reference: same values, dtypes and shapes, and the same errors, on edge cases too (empty
tensors, broadcasting, non-contiguous inputs, bad arguments)."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework import dtypes, errors
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.reference import REFERENCE
from dtf.state.resources import VariableResource

F16, F32, F64, I32, I64 = dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64
RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _quiet_float_errors():
    with np.errstate(all="ignore"):  # as the executor runs every step
        yield


def kernel(op, attrs, out_dtype=None):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [out_dtype] if out_dtype else [])
    kdef = registry.lookup(op, "CPU", node.dtype_key)
    assert not kdef.fallback, f"{op} is still served by the reference"
    return kdef.factory(node)


def check(op, attrs, *inputs, out_dtype=None):
    """The kernel's result equals the reference's exactly (values, dtype, shape)."""
    got = kernel(op, attrs, out_dtype)(None, *inputs)
    want = REFERENCE[op](attrs, *inputs)
    got_t, want_t = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    assert len(got_t) == len(want_t)
    for g, w in zip(got_t, want_t):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (op, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_array_equal(g, w, err_msg=op)
    return got


def check_same_error(op, attrs, *inputs, out_dtype=None):
    """The kernel rejects what the reference rejects, with the same message."""
    with pytest.raises(Exception) as want:
        REFERENCE[op](attrs, *inputs)
    with pytest.raises(type(want.value)) as got:
        kernel(op, attrs, out_dtype)(None, *inputs)
    assert str(got.value) == str(want.value)


def ints(*values, dtype=np.int32):
    return np.array(values, dtype)


def strided(shape, dtype=np.float32):
    """A non-contiguous array of ``shape`` (every other column of a wider one)."""
    wide = RNG.normal(size=shape[:-1] + (2 * shape[-1],)).astype(dtype)
    return wide[..., ::2]


# -- shape-only ops ------------------------------------------------------------------------------
@pytest.mark.parametrize("x", [np.zeros((2, 3)), np.zeros(()), np.zeros((0, 4), np.int64),
                               np.array([b"a", b"b"], dtype=object)])
@pytest.mark.parametrize("out_type", [I32, I64])
def test_shape_and_size(x, out_type):
    check("Shape", {"out_type": out_type, "T": F32}, x)
    check("Size", {"out_type": out_type, "T": F32}, x)


@pytest.mark.parametrize("x,shape", [
    (np.arange(6.0), ints(2, 3)), (np.arange(6.0), ints(-1, 2, dtype=np.int64)),
    (np.arange(1.0), ints()), (np.float32(1.0) + np.zeros(()), ints(1, 1)),
    (np.zeros((0, 3)), ints(3, 0)), (strided((2, 3)), ints(3, 2)), (np.arange(4.0), ints(2, 2)[None]),
    (np.arange(6.0), np.array(6, np.int32)),
])
def test_reshape(x, shape):
    check("Reshape", {"T": F64}, x, shape)


@pytest.mark.parametrize("shape", [ints(4, 2), ints(-1, -1), ints(7)])
def test_reshape_errors(shape):
    check_same_error("Reshape", {"T": F64}, np.arange(6.0), shape)


def test_reshape_result_does_not_alias_across_calls():
    k = kernel("Reshape", {"T": F64})
    x = np.arange(6.0)
    assert k(None, x, ints(2, 3)).shape == (2, 3) and k(None, x, ints(3, 2)).shape == (3, 2)


@pytest.mark.parametrize("x", [np.arange(6.0).reshape(2, 3), np.zeros(()), strided((2, 3))])
def test_expand_dims(x):
    for a in range(-x.ndim - 1, x.ndim + 1):
        check("ExpandDims", {"T": F64}, x, np.array(a, np.int32))
        check("ExpandDims", {"T": F64}, x, ints(a, dtype=np.int64))


@pytest.mark.parametrize("axis", [np.array(3, np.int32), np.array(-4, np.int32)])
def test_expand_dims_out_of_range(axis):
    check_same_error("ExpandDims", {"T": F64}, np.zeros((2, 3)), axis)


@pytest.mark.parametrize("x,shape", [
    (np.float32(2.5) + np.zeros((), np.float32), ints(4)), (np.arange(3.0), ints(2, 3)),
    (np.arange(3.0)[:, None], ints(3, 4)), (np.zeros((1, 3)), ints(0, 3)),
    (strided((2, 3)), ints(2, 2, 3)), (np.arange(3), ints(3)),
    (np.array([b"x"], dtype=object), ints(2)),
])
def test_broadcast_to(x, shape):
    out = check("BroadcastTo", {"T": F64}, x, shape)
    assert out.flags.writeable


@pytest.mark.parametrize("x,shape", [(np.zeros((1, 3)), ints(3)), (np.zeros(3), ints(4)),
                                     (np.zeros(3), ints(-1, 3))])
def test_broadcast_to_errors(x, shape):
    check_same_error("BroadcastTo", {"T": F64}, x, shape)


@pytest.mark.parametrize("s0,s1", [((2, 3), (3,)), ((2, 1, 4), (5, 1)), ((), (2, 2)), ((4,), (4,)),
                                   ((1, 1), (1,)), ((0, 3), (1, 3))])
def test_broadcast_gradient_args(s0, s1):
    k = kernel("BroadcastGradientArgs", {"T": I32})
    a, b = ints(*s0), ints(*s1)
    first = check("BroadcastGradientArgs", {"T": I32}, a, b)
    first[0][...] = 99  # a caller scribbling on a result does not change the next one
    again = k(None, a, b)
    want = REFERENCE["BroadcastGradientArgs"]({}, a, b)
    assert all(np.array_equal(g, w) for g, w in zip(again, want))


def test_broadcast_gradient_args_incompatible():
    check_same_error("BroadcastGradientArgs", {"T": I32}, ints(2, 3), ints(4))


# -- MatMul and reductions ---------------------------------------------------------------------------
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_mat_mul(ta, tb, dtype):
    a = RNG.normal(size=(3, 4) if not ta else (4, 3)).astype(dtype)
    b = RNG.normal(size=(4, 5) if not tb else (5, 4)).astype(dtype)
    attrs = {"transpose_a": ta, "transpose_b": tb, "T": dtypes.as_dtype(dtype)}
    check("MatMul", attrs, a, b)
    check("MatMul", attrs, np.asfortranarray(a), b[::1])


def test_mat_mul_empty_and_strided():
    attrs = {"transpose_a": False, "transpose_b": False, "T": F32}
    check("MatMul", attrs, np.zeros((0, 3), np.float32), np.ones((3, 2), np.float32))
    check("MatMul", attrs, np.zeros((2, 0), np.float32), np.ones((0, 2), np.float32))
    check("MatMul", attrs, strided((3, 4)), strided((4, 2)))


@pytest.mark.parametrize("a,b", [((2, 3), (4, 5)), ((2, 2, 2), (2, 2)), ((3,), (3, 2))])
def test_mat_mul_errors(a, b):
    attrs = {"transpose_a": False, "transpose_b": False, "T": F32}
    check_same_error("MatMul", attrs, np.zeros(a, np.float32), np.zeros(b, np.float32))


REDUCTIONS = ["Sum", "Prod", "Max", "Min", "Mean"]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("axes", [ints(0), ints(1), ints(-1, 0), ints(0, 0), ints(), np.array(1, np.int64)])
def test_reductions(op, keep, axes):
    attrs = {"keep_dims": keep, "T": F32}
    for x in (RNG.normal(size=(3, 4)).astype(np.float32), strided((3, 4))):
        check(op, attrs, x, axes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(257, 33), (1, 5), (0, 4), (4, 0)])
def test_sum_over_rows_is_bit_identical(dtype, shape):
    x = (RNG.normal(size=shape) * 1e3).astype(dtype)
    for keep in (False, True):
        check("Sum", {"keep_dims": keep, "T": dtypes.as_dtype(dtype)}, x, ints(0))
        check("Sum", {"keep_dims": keep, "T": dtypes.as_dtype(dtype)}, x, ints(-2, dtype=np.int64))


@pytest.mark.parametrize("op", ["Sum", "Mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", [((4, 7, 5, 6), (0, 1, 2)), ((3, 5, 7), (0, 1)),
                                        ((6, 0, 3), (0, 1)), ((2, 3, 4), (0, 2)),
                                        ((2, 3, 4), (1, 2)), ((2, 3, 4), (0, 1, 2)),
                                        ((5, 6, 7, 3), (1, 2)), ((4, 3, 5, 2), (1,)),
                                        ((3, 0, 4, 2), (1, 2)), ((2, 3, 4, 5), (1, 3))])
def test_sums_over_a_run_of_axes_are_bit_identical(op, dtype, shape, axes):
    """A convolution's bias gradient (NHWC summed over batch and pixels) and a global
    average pool (over the pixels) through the loop; other axis sets through numpy; either
    way numpy's values, bit for bit."""
    x = (RNG.normal(size=shape) * 1e3).astype(dtype)
    with np.errstate(all="ignore"):  # the mean over no elements is nan, as in numpy
        for keep in (False, True):
            check(op, {"keep_dims": keep, "T": dtypes.as_dtype(dtype)}, x, ints(*axes))
        check(op, {"keep_dims": False, "T": dtypes.as_dtype(dtype)}, x[::-1], ints(*axes))


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", [((300, 64), (1,)), ((5000, 9), (-1,)), ((7, 1), (1,)),
                                        ((4, 3, 8), (1, 2)), ((3, 5, 17), (0, 1, 2)),
                                        ((1, 128), (1,)), ((9, 129), (1,)), ((4, 0), (1,)),
                                        ((2, 3, 7), (2,)), ((6, 5, 4), (1,))])
def test_reductions_over_short_rows_are_bit_identical(op, dtype, shape, axes):
    """Rows of up to math.SHORT_ROW_MAX elements (the trailing axes reduced) in the Numba
    loops, with NaN, infinities and signed zeros among the values; wider rows, other axes
    and strided inputs through numpy: numpy's values either way, bit for bit (sums added
    in numpy's pairwise order)."""
    from dtf.kernels.cpu import jit_loading, math as cpu_math

    assert jit_loading.wait(120)
    x = (RNG.normal(size=shape) * 10.0 ** RNG.uniform(-3, 3, size=shape)).astype(dtype)
    flat = x.reshape(-1)
    if flat.size > 40:
        flat[[3, 17, 29]] = [np.nan, np.inf, -0.0]
        flat[-1] = -np.inf
    attrs = {"keep_dims": False, "T": dtypes.as_dtype(dtype)}
    if op in ("Max", "Min") and x.size == 0:
        check_same_error(op, attrs, x, ints(*axes))
        return
    for keep in (False, True):
        got = check(op, dict(attrs, keep_dims=keep), x, ints(*axes))
        assert np.signbit(got).tolist() == np.signbit(REFERENCE[op](dict(attrs, keep_dims=keep), x, ints(*axes))).tolist()
    check(op, attrs, x[::-1], ints(*axes))  # reversed rows: a view, numpy's
    assert cpu_math.SHORT_ROW_MAX == 128


@pytest.mark.parametrize("op", ["Sum", "Prod", "Max", "Min"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.float16, np.float64])
def test_reductions_keep_dtype(op, dtype):
    x = RNG.integers(-50 if np.dtype(dtype).kind != "u" else 0, 100, size=(4, 6)).astype(dtype)
    check(op, {"keep_dims": False, "T": dtypes.as_dtype(dtype)}, x, ints(0, 1))
    check(op, {"keep_dims": False, "T": dtypes.as_dtype(dtype)}, x, ints(1))


@pytest.mark.filterwarnings("ignore:Mean of empty slice")  # the reference's np.mean
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_scalars_and_empty(op):
    attrs = {"keep_dims": False, "T": F64}
    check(op, attrs, np.array(2.5), ints())
    check(op, attrs, np.array(2.5), ints(0))
    if op in ("Max", "Min"):
        check_same_error(op, attrs, np.zeros((0, 3)), ints(0))
    else:
        check(op, attrs, np.zeros((0, 3)), ints(0))


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_axis_out_of_range(op):
    check_same_error(op, {"keep_dims": False, "T": F32}, np.zeros((2, 3), np.float32), ints(2))


def test_reduction_axes_cache_follows_rank_and_value():
    k = kernel("Sum", {"keep_dims": False, "T": F64})
    x2, x3 = np.ones((2, 3)), np.ones((2, 3, 4))
    assert k(None, x2, ints(-1)).shape == (2,)
    assert k(None, x3, ints(-1)).shape == (2, 3)
    axes = ints(0)
    assert k(None, x3, axes).shape == (3, 4)
    axes[0] = 2  # the same array, changed: the cache keys on the value
    assert k(None, x3, axes).shape == (2, 3)


# -- Cast, Relu, ReluGrad ------------------------------------------------------------------------
@pytest.mark.parametrize("src,dst", [(np.float32, I32), (np.int32, F32), (np.float64, dtypes.bool),
                                     (np.bool_, F32), (np.float32, F32), (np.int64, dtypes.uint8)])
def test_cast(src, dst):
    x = np.array([[-1.5, 0.0, 2.7], [300.0, np.nan, np.inf]]).astype(src)
    check("Cast", {"DstT": dst, "SrcT": dtypes.as_dtype(src)}, x, out_dtype=dst)
    check("Cast", {"DstT": dst, "SrcT": dtypes.as_dtype(src)}, x[:, ::2], out_dtype=dst)


def test_cast_from_strings_raises():
    x = np.array([b"1"], dtype=object)
    check_same_error("Cast", {"DstT": F32, "SrcT": dtypes.string}, x, out_dtype=F32)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_relu(dtype):
    x = np.array([[-2, -0.0, 0, 3], [np.nan, -np.inf, np.inf, 1]] if np.dtype(dtype).kind == "f"
                 else [[-2, 0, 3, 1]]).astype(dtype)
    check("Relu", {"T": dtypes.as_dtype(dtype)}, x)
    check("Relu", {"T": dtypes.as_dtype(dtype)}, np.zeros((0, 2), dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad(dtype):
    attrs = {"T": dtypes.as_dtype(dtype)}
    g = np.array([[1.0, -2.0, np.nan, np.inf], [-3.0, np.nan, 5.0, -np.inf]], dtype)
    f = np.array([[1.0, -1.0, 0.0, -0.0], [np.nan, 2.0, -7.0, 0.5]], dtype)
    check("ReluGrad", attrs, g, f)
    check("ReluGrad", attrs, g.T, f.T)  # non-contiguous
    check("ReluGrad", attrs, np.zeros((0, 3), dtype), np.zeros((0, 3), dtype))
    check("ReluGrad", attrs, g, f[:1])  # broadcasting goes through the reference


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_grad_large_runs_in_slices(dtype):
    # Over two slices of the intra-op threads, with a ragged last slice; NaNs and signed
    # zeros in both inputs end up where the one-pass loop puts them.
    from dtf.kernels.cpu.elementwise import SLICE_ELEMENTS

    shape = (3, SLICE_ELEMENTS + 7)
    g, f = RNG.normal(size=shape).astype(dtype), RNG.normal(size=shape).astype(dtype)
    g[0, :5], f[1, -5:], f[2, :3] = np.nan, np.nan, -0.0
    check("ReluGrad", {"T": dtypes.as_dtype(dtype)}, g, f)
    check("ReluGrad", {"T": dtypes.as_dtype(dtype)}, g[:, ::-1], f[:, ::-1])  # not contiguous


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_add_n(dtype, count):
    from dtf.kernels.cpu.elementwise import SLICE_ELEMENTS

    attrs = {"T": dtypes.as_dtype(dtype), "N": count}
    for shape in [(), (0, 4), (3, 5), (2, SLICE_ELEMENTS + 3), (SLICE_ELEMENTS // 4, 16)]:
        xs = [(RNG.normal(size=shape) * 100).astype(dtype) for _ in range(count)]
        got = check("AddN", attrs, *xs)
        assert all(got is not x for x in xs)  # a fresh output, never an input
    big = [RNG.normal(size=(5, SLICE_ELEMENTS)).astype(dtype) for _ in range(count)]
    check("AddN", attrs, *(x.T for x in big))  # not contiguous
    if count > 1:
        check("AddN", attrs, big[0], *(x[:1] for x in big[1:]))  # broadcasts as the reference


def test_add_n_keeps_nan_and_inf():
    a = np.full(3 << 17, np.inf, np.float32)
    b = np.zeros_like(a)
    b[::3], b[1::3] = -np.inf, np.nan
    check("AddN", {"T": F32, "N": 3}, a, b, a)


# -- sparse softmax cross-entropy ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_xent_matches_reference(dtype, label_dtype):
    logits = RNG.normal(size=(6, 5)).astype(dtype)
    labels = RNG.integers(0, 5, 6).astype(label_dtype)
    k = kernel("SparseSoftmaxCrossEntropyWithLogits", {"T": dtypes.as_dtype(dtype)})
    for lg in (logits, np.asfortranarray(logits)):
        got = k(None, lg, labels)
        want = REFERENCE["SparseSoftmaxCrossEntropyWithLogits"]({}, lg, labels)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    empty = k(None, np.zeros((0, 5), dtype), np.zeros(0, label_dtype))
    assert empty[0].shape == (0,) and empty[1].shape == (0, 5)


@pytest.fixture
def wide_rows_in_blocks(monkeypatch):
    """Every row of WIDE_CLASSES (64) classes or more takes the blocked path, in several blocks of rows
    with a short last one."""
    from dtf.kernels.cpu import nn as cpu_nn

    monkeypatch.setattr(cpu_nn, "WIDE_MIN_ELEMENTS", 0)
    monkeypatch.setattr(cpu_nn, "BLOCK_BYTES", 3 * 301 * 4)


WIDE_SHAPES = [(1, 64), (9, 100), (1, 256), (7, 301), (700, 1000), (3, 5001)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", WIDE_SHAPES)
def test_wide_sparse_xent_in_row_blocks_matches_reference(dtype, shape, wide_rows_in_blocks):
    logits = (RNG.normal(size=shape) * 5).astype(dtype)
    logits[0, :7] = 80.0  # large logits: the shift keeps exp finite
    labels = RNG.integers(0, shape[1], shape[0]).astype(np.int64)
    k = kernel("SparseSoftmaxCrossEntropyWithLogits", {"T": dtypes.as_dtype(dtype)})
    for lg in (logits, strided(shape, dtype)):
        got = k(None, lg, labels)
        want = REFERENCE["SparseSoftmaxCrossEntropyWithLogits"]({}, lg, labels)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", WIDE_SHAPES)
def test_wide_dense_xent_in_row_blocks_matches_reference(dtype, shape, wide_rows_in_blocks):
    logits = (RNG.normal(size=shape) * 5).astype(dtype)
    logits[0, :7] = 80.0
    labels = RNG.random(shape).astype(dtype)
    labels[-1] = 0.0
    labels[-1, -1] = 1.0  # a one-hot row
    labels /= labels.sum(axis=1, keepdims=True)
    k = kernel("SoftmaxCrossEntropyWithLogits", {"T": dtypes.as_dtype(dtype)})
    for lg, lb in ((logits, labels), (strided(shape, dtype), np.asfortranarray(labels))):
        got = k(None, lg, lb)
        want = REFERENCE["SoftmaxCrossEntropyWithLogits"]({}, lg, lb)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("labels", [ints(0, 300), ints(-1, 0), ints(299, 300, dtype=np.int64)])
def test_wide_sparse_xent_label_out_of_range(labels, wide_rows_in_blocks):
    check_same_error("SparseSoftmaxCrossEntropyWithLogits", {"T": F32},
                     np.zeros((2, 300), np.float32), labels)


@pytest.mark.parametrize("labels", [ints(0, 5), ints(-1, 0), ints(3, 0, dtype=np.int64)])
def test_sparse_xent_label_out_of_range(labels):
    check_same_error("SparseSoftmaxCrossEntropyWithLogits", {"T": F32},
                     np.zeros((2, 3), np.float32), labels)


def test_sparse_xent_shape_mismatch():
    check_same_error("SparseSoftmaxCrossEntropyWithLogits", {"T": F32},
                     np.zeros((2, 3), np.float32), ints(0, 1, 2))


def test_sparse_xent_out_of_range_names_op_in_session():
    logits = tf.placeholder(tf.float32, [None, 3])
    labels = tf.placeholder(tf.int64, [None])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xent")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"label value of 7.*\[0, 3\)") as e:
            sess.run(loss, {logits: np.zeros((2, 3)), labels: [0, 7]})
    assert "xent" in str(e.value)


# -- variable updates ------------------------------------------------------------------------------
def _variable(value):
    ref = VariableResource("v", dtypes.as_dtype(value.dtype), value.shape)
    ref.value = value
    return ref


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_apply_gradient_descent(dtype):
    var = RNG.normal(size=(3, 4)).astype(dtype)
    alpha, delta = np.array(0.1, dtype), RNG.normal(size=(3, 4)).astype(dtype)
    before = var.copy()
    ref = _variable(var)
    k = kernel("ApplyGradientDescent", {"T": dtypes.as_dtype(dtype)})
    out = k(None, ref, alpha, delta)
    assert out is ref.value and out.dtype == dtype
    np.testing.assert_array_equal(out, before - alpha * delta)
    np.testing.assert_array_equal(var, before)  # replaced, not changed in place
    big = RNG.normal(size=(130, 70)).astype(dtype)
    ref.value = big
    np.testing.assert_array_equal(k(None, ref, alpha, big[::-1]), big - alpha * big[::-1])
    ref.value = out
    wide = RNG.normal(size=(3, 8)).astype(dtype)
    np.testing.assert_array_equal(k(None, ref, alpha, wide[:, ::2]), out - alpha * wide[:, ::2])


@pytest.mark.parametrize("shape", [(3, 4), (1024, 600)])  # one slice, and slices on threads
def test_apply_gradient_descent_writes_in_place_what_nothing_else_holds(shape):
    from dtf.kernels.cpu import jit_loading

    jit_loading.start()
    assert jit_loading.wait(120)
    k = kernel("ApplyGradientDescent", {"T": F32})
    alpha, delta = np.array(0.1, np.float32), RNG.normal(size=shape).astype(np.float32)
    ref = _variable(RNG.normal(size=shape).astype(np.float32))
    expected = ref.value - alpha * delta
    before = id(ref.value)  # an id: holding the array would share it
    out = k(None, ref, alpha, delta)
    assert id(out) == before and out is ref.value
    np.testing.assert_array_equal(out, expected)
    held = ref.value  # a reader now holds it: the next update replaces it
    kept = held.copy()
    k(None, ref, alpha, delta)
    assert ref.value is not held
    np.testing.assert_array_equal(held, kept)


def test_apply_gradient_descent_writes_in_place_before_the_loops_load_too(monkeypatch):
    from dtf.kernels.cpu import jit_loading

    monkeypatch.setattr(jit_loading, "loaded", lambda: False)  # the numpy stand-ins serve
    monkeypatch.setattr(jit_loading, "charge", lambda *a, **k: None)  # and start nothing
    k = kernel("ApplyGradientDescent", {"T": F32})
    alpha, delta = np.array(0.1, np.float32), RNG.normal(size=(3, 4)).astype(np.float32)
    ref = _variable(RNG.normal(size=(3, 4)).astype(np.float32))
    expected = ref.value - alpha * delta
    before = id(ref.value)
    out = k(None, ref, alpha, delta)
    assert id(out) == before and out is ref.value
    np.testing.assert_array_equal(out, expected)
    held = ref.value
    kept = held.copy()
    k(None, ref, alpha, delta[:, ::-1])  # held elsewhere: replaced, whatever the layout
    assert ref.value is not held
    np.testing.assert_array_equal(held, kept)
    np.testing.assert_array_equal(ref.value, kept - alpha * delta[:, ::-1])


def test_apply_gradient_descent_shape_mismatch():
    k = kernel("ApplyGradientDescent", {"T": F32})
    ref = _variable(np.zeros((2, 2), np.float32))
    with pytest.raises(errors.InvalidArgumentError, match="same shape"):
        k(None, ref, np.array(0.1, np.float32), np.zeros(3, np.float32))
    with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
        k(None, VariableResource("u", F32, (2,)), np.array(0.1, np.float32), np.zeros(2, np.float32))


def test_assign_add_shapes():
    k = kernel("AssignAdd", {"T": I64})
    ref = _variable(np.array(3, np.int64))
    assert int(k(None, ref, np.array(2, np.int64))) == 5
    with pytest.raises(errors.InvalidArgumentError, match="shapes of both tensors"):
        k(None, ref, np.array([1, 2], np.int64))
