"""Elementwise math, reductions, arg-max/min and clipping: forward against numpy,
gradients against finite differences, and TF's dtype/shape error rules."""
import math

import numpy as np
import pytest

import dtf as tf
from dtf.ops import math_ops
from tests.opcheck import check_against_reference, check_gradient, run

RNG = np.random.default_rng(0)
_erf = np.vectorize(math.erf)

# name -> (numpy definition, input range, defined on int32)
UNARY = {
    "negative": (np.negative, (-3, 3), True), "abs": (np.abs, (-3, 3), True),
    "sign": (np.sign, (-3, 3), True), "square": (np.square, (-3, 3), True),
    "sqrt": (np.sqrt, (0.1, 4), False), "rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 4), False),
    "reciprocal": (lambda x: 1 / x, (0.5, 3), False), "exp": (np.exp, (-2, 2), False),
    "log": (np.log, (0.1, 4), False), "log1p": (np.log1p, (-0.5, 3), False),
    "sin": (np.sin, (-3, 3), False), "cos": (np.cos, (-3, 3), False),
    "tan": (np.tan, (-1, 1), False), "tanh": (np.tanh, (-3, 3), False),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-4, 4), False),
    "floor": (np.floor, (-3, 3), False), "ceil": (np.ceil, (-3, 3), False),
    "round": (np.round, (-3, 3), False), "expm1": (np.expm1, (-2, 2), False),
    "erf": (_erf, (-2, 2), False), "atan": (np.arctan, (-3, 3), False),
    "asin": (np.arcsin, (-0.9, 0.9), False), "acos": (np.arccos, (-0.9, 0.9), False),
    "sinh": (np.sinh, (-2, 2), False), "cosh": (np.cosh, (-2, 2), False),
}
# Piecewise-constant ops: their gradient is None (checked separately).
NON_DIFFERENTIABLE_UNARY = {"sign", "floor", "ceil", "round"}

# name -> (numpy definition, x range, y range, defined on int32)
BINARY = {
    "add": (np.add, (-3, 3), (-3, 3), True), "subtract": (np.subtract, (-3, 3), (-3, 3), True),
    "multiply": (np.multiply, (-3, 3), (-3, 3), True),
    "realdiv": (np.true_divide, (-3, 3), (0.5, 3), False),
    "floordiv": (np.floor_divide, (-5, 5), (1, 3), True),
    "floormod": (np.mod, (-5, 5), (1, 3), True),
    "pow": (np.power, (0.5, 2), (-2, 2), False),
    "maximum": (np.maximum, (-3, 3), (-3, 3), True), "minimum": (np.minimum, (-3, 3), (-3, 3), True),
    "squared_difference": (lambda x, y: (x - y) ** 2, (-3, 3), (-3, 3), True),
    "truncatediv": (lambda x, y: np.trunc(x / y), (-5, 5), (1, 3), True),
    "div_no_nan": (np.true_divide, (-3, 3), (0.5, 3), False),
    "atan2": (np.arctan2, (-3, 3), (-3, 3), False),
    "xdivy": (np.true_divide, (-3, 3), (0.5, 3), False),
}
NON_DIFFERENTIABLE_BINARY = {"floordiv", "truncatediv"}


def _op(name):
    """The tf.<name> function; tf.math-only ops (xdivy) come from math_ops."""
    return getattr(tf, name) if hasattr(tf, name) else getattr(math_ops, name)


def _sample(lo, hi, shape=(2, 3), dtype=np.float64):
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(lo, hi, size=shape).astype(dtype)
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


# -- forward --------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_unary_forward(name, dtype):
    ref, (lo, hi), int_ok = UNARY[name]
    if dtype == np.int32 and not int_ok:
        pytest.skip("float-only op")
    x = _sample(lo, hi, dtype=dtype)
    y = getattr(tf, name)(tf.constant(x))
    assert y.dtype == tf.as_dtype(dtype) and y.shape == tf.TensorShape([2, 3])
    got = check_against_reference(y)
    np.testing.assert_allclose(got, ref(x.astype(np.float64)).astype(dtype), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_binary_forward(name, dtype):
    ref, xr, yr, int_ok = BINARY[name]
    if dtype == np.int32 and not int_ok:
        pytest.skip("float-only op")
    x, y = _sample(*xr, dtype=dtype), _sample(*yr, dtype=dtype)
    z = _op(name)(tf.constant(x), tf.constant(y))
    assert z.dtype == tf.as_dtype(dtype) and z.op.type == z.op.name
    got = check_against_reference(z)
    want = ref(x, y) if dtype == np.int32 else ref(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(got, np.asarray(want).astype(dtype), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("y_shape", [(3,), (2, 1), (1, 3), ()])
def test_broadcasting(y_shape):
    x, y = _sample(-2, 2), _sample(1, 2, shape=y_shape)
    z = tf.constant(x) * tf.constant(y) - tf.constant(y)
    assert z.shape == tf.TensorShape([2, 3])
    np.testing.assert_allclose(run(z), x * y - y, rtol=1e-6)


def test_broadcast_mismatch_is_value_error():
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4.*'add'"):
        tf.zeros([2, 3]) + tf.zeros([2, 4])


@pytest.mark.parametrize("name,ref", [("less", np.less), ("less_equal", np.less_equal),
                                      ("greater", np.greater), ("greater_equal", np.greater_equal),
                                      ("equal", np.equal), ("not_equal", np.not_equal)])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_comparisons(name, ref, dtype):
    x, y = _sample(-2, 2, dtype=dtype), _sample(-2, 2, shape=(3,), dtype=dtype)
    z = getattr(tf, name)(x, y)
    assert z.dtype == tf.bool
    np.testing.assert_array_equal(run(z), ref(x, y))


def test_comparison_operators():
    x = tf.constant([1, 2, 3])
    got = run([x < 2, x <= 2, x > 2, x >= 2])
    np.testing.assert_array_equal(got, [[1, 0, 0], [1, 1, 0], [0, 0, 1], [0, 1, 1]])


@pytest.mark.parametrize("name,ref", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                      ("logical_xor", np.logical_xor)])
def test_logical(name, ref):
    a = np.array([[True, False], [True, True]])
    b = np.array([True, False])
    np.testing.assert_array_equal(run(getattr(tf, name)(a, b)), ref(a, b))
    ta, tb = tf.constant(a), tf.constant(b)
    np.testing.assert_array_equal(run([ta & tb, ta | tb, ta ^ tb, ~ta]),
                                  [a & b, a | b, a ^ b, ~a])
    np.testing.assert_array_equal(run(tf.logical_not(a)), ~a)


def test_is_nan_inf_finite():
    x = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    got = run([tf.is_nan(x), tf.is_inf(x), tf.is_finite(x)])
    np.testing.assert_array_equal(got, [np.isnan(x), np.isinf(x), np.isfinite(x)])


# -- dtype rules ----------------------------------------------------------------------
def test_dtype_mismatch_is_type_error():
    with pytest.raises(TypeError, match="float32.*int32|int32.*float32"):
        tf.constant(1) + tf.constant(1.0)
    with pytest.raises(TypeError):
        tf.add(tf.constant([1.0]), tf.constant([1], tf.int64))


def test_python_scalars_take_tensor_dtype():
    x = tf.constant([1.5, 2.5], tf.float64)
    assert (x * 2).dtype == tf.float64 and (2 + x).dtype == tf.float64
    with pytest.raises(TypeError):
        tf.constant([1, 2]) * 1.5


def test_truediv_of_ints_is_float():
    z = tf.constant([7, -7]) / tf.constant([2, 2])
    assert z.dtype == tf.float64 and z.op.name == "truediv"
    np.testing.assert_allclose(run(z), [3.5, -3.5])
    assert run(tf.constant([7, -7]) // 2).tolist() == [3, -4]
    assert run(tf.constant([7, -7]) % 3).tolist() == [1, 2]


def test_cast_add_n_where():
    x = tf.constant([1.7, -1.7])
    assert run(tf.cast(x, tf.int32)).tolist() == [1, -1]
    assert tf.cast(x, tf.float32) is x
    np.testing.assert_allclose(run(tf.add_n([x, x, x])), [5.1, -5.1], rtol=1e-6)
    np.testing.assert_allclose(run(tf.where([True, False], x, -x)), [1.7, 1.7], rtol=1e-6)
    assert run(tf.saturate_cast(tf.constant([300.0, -5.0]), tf.uint8)).tolist() == [255, 0]


def test_op_names_of_operators():
    a, b = tf.constant(1.0), tf.constant(2.0)
    assert [t.op.name for t in (a + b, a - b, a * b, a / b, -a)] == ["add", "sub", "mul", "truediv", "Neg"]
    assert tf.add(a, b, name="total").op.name == "total"


def test_all_lists_public_names():
    for name in math_ops.__all__:
        assert callable(getattr(math_ops, name))
    assert {"add", "cast", "add_n", "where", "truediv", "sigmoid"} <= set(math_ops.__all__)


# -- gradients ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(set(UNARY) - NON_DIFFERENTIABLE_UNARY))
def test_unary_gradient(name):
    _, (lo, hi), _ = UNARY[name]
    check_gradient(getattr(tf, name), [_sample(lo, hi)])


@pytest.mark.parametrize("name", sorted(NON_DIFFERENTIABLE_UNARY))
def test_piecewise_constant_unary_has_no_gradient(name):
    x = tf.placeholder(tf.float32, [3])
    assert tf.gradients(getattr(tf, name)(x), x) == [None]


@pytest.mark.parametrize("name", sorted(set(BINARY) - NON_DIFFERENTIABLE_BINARY))
def test_binary_gradient(name):
    _, xr, yr, _ = BINARY[name]
    # Keep samples off the kinks (ties for max/min, integer quotients for floormod).
    x = _sample(*xr) if name != "floormod" else np.array([[-4.3, -1.2, 0.7], [1.6, 2.2, 4.4]])
    y = _sample(*yr, shape=(3,)) if name != "floormod" else np.array([1.5, 2.5, 1.7])
    check_gradient(_op(name), [x, y])


@pytest.mark.parametrize("name", sorted(NON_DIFFERENTIABLE_BINARY))
def test_integer_division_has_no_gradient(name):
    x, y = tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [3])
    assert tf.gradients(getattr(tf, name)(x, y), [x, y]) == [None, None]


def test_select_and_add_n_gradients():
    c = np.array([[True, False, True], [False, False, True]])
    check_gradient(lambda x, y: tf.where(c, x, y) * tf.add_n([x, y, x]),
                   [_sample(-2, 2), _sample(-2, 2)])


# -- reductions -------------------------------------------------------------------------
REDUCTIONS = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max,
              "reduce_min": np.min, "reduce_prod": np.prod}
AXES = [None, 0, 1, -1, [0, 2], [-1, 0]]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(name, axis, keepdims):
    x = _sample(0.5, 1.5, shape=(2, 3, 4), dtype=np.float32)
    y = getattr(tf, name)(tf.constant(x), axis=axis, keepdims=keepdims)
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    want = REDUCTIONS[name](x, axis=np_axis, keepdims=keepdims)
    assert y.shape.as_list() == list(np.shape(want))
    np.testing.assert_allclose(check_against_reference(y), want, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_integer_reductions(name):
    x = _sample(1, 4, shape=(3, 4), dtype=np.int32)
    got = run(getattr(tf, name)(x, axis=1))
    want = x.sum(axis=1) // 4 if name == "reduce_mean" else REDUCTIONS[name](x, axis=1)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name,ref", [("reduce_any", np.any), ("reduce_all", np.all)])
@pytest.mark.parametrize("axis", [None, 0, -1, [0, 1]], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_logical_reductions(name, ref, axis, keepdims):
    x = np.array([[True, False, True], [True, True, True]])
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    np.testing.assert_array_equal(run(getattr(tf, name)(x, axis=axis, keepdims=keepdims)),
                                  ref(x, axis=np_axis, keepdims=keepdims))


def test_reduction_aliases_and_errors():
    x = tf.constant(np.ones((2, 3), np.float32))
    assert tf.reduce_sum(x).op.name == "Sum" and tf.reduce_mean(x).op.name == "Mean"
    assert run(tf.reduce_sum(x, reduction_indices=[1], keep_dims=True)).tolist() == [[3.0], [3.0]]
    with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
        tf.reduce_sum(x, axis=2)


@pytest.mark.parametrize("name,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argmax_argmin(name, ref, axis):
    x = _sample(-3, 3, shape=(3, 4), dtype=np.float32)
    y = getattr(tf, name)(x, axis=axis)
    assert y.dtype == tf.int64 and y.op.type == y.op.name
    np.testing.assert_array_equal(check_against_reference(y), ref(x, axis=axis))
    assert getattr(tf, name)(x, axis, output_type=tf.int32).dtype == tf.int32
    xp = tf.placeholder(tf.float32, [3, 4])
    assert tf.gradients(tf.cast(getattr(tf, name)(xp, axis), tf.float32), xp) == [None]


# -- clipping -------------------------------------------------------------------------------
def test_clip_by_value():
    x = np.array([[-2.0, 0.5], [1.5, 3.0]], np.float32)
    y = tf.clip_by_value(x, -1.0, 1.0)
    assert y.op.name == "clip_by_value" and y.op.type == "Maximum"
    np.testing.assert_allclose(run(y), np.clip(x, -1, 1))
    np.testing.assert_allclose(run(tf.clip_by_value(x, [0.0, 1.0], 2.0)), np.clip(x, [0, 1], 2))
    with pytest.raises(ValueError):
        tf.clip_by_value(tf.constant([1.0, 2.0]), [[0.0], [1.0]], 3.0)
    check_gradient(lambda t: tf.clip_by_value(t, -1.0, 1.0), [np.array([-2.0, -0.3, 0.4, 2.5])])


def test_clip_by_norm():
    x = np.array([[3.0, 4.0], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(run(tf.clip_by_norm(x, 2.0)), x * 2 / 5)
    np.testing.assert_allclose(run(tf.clip_by_norm(x, 10.0)), x)
    np.testing.assert_allclose(run(tf.clip_by_norm(x, 2.0, axes=[1])), x * 2 / 5)
    check_gradient(lambda t: tf.clip_by_norm(t, 2.0, axes=[1]), [np.array([[3.0, 4.0], [0.1, 0.2]])])


def test_global_norm_and_clip_by_global_norm():
    a, b = np.array([3.0, 0.0], np.float32), np.array([[4.0]], np.float32)
    norm = tf.global_norm([a, None, b])
    assert norm.op.name == "global_norm/global_norm"
    assert run(norm) == pytest.approx(5.0)
    clipped, n = tf.clip_by_global_norm([a, None, b], 2.5)
    assert clipped[1] is None
    assert clipped[0].op.name == "clip_by_global_norm/clip_by_global_norm/_0"
    ca, cb, nv = run([clipped[0], clipped[2], n])
    np.testing.assert_allclose(ca, a / 2)
    np.testing.assert_allclose(cb, b / 2)
    assert nv == pytest.approx(5.0)
    unchanged, _ = tf.clip_by_global_norm([a], 10.0)
    np.testing.assert_allclose(run(unchanged[0]), a)
    nan, _ = tf.clip_by_global_norm([np.array([np.inf, 1.0], np.float32)], 1.0)
    assert np.isnan(run(nan[0])).all()
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(tf.constant(a), 1.0)
    check_gradient(lambda x, y: tf.clip_by_global_norm([x, y], 1.0)[0][0], [a.astype(float), b.astype(float)])


def test_truncatemod_keeps_the_dividends_sign_unlike_floormod():
    x, y = tf.constant([-7.0, 7.0, -7.0]), tf.constant([3.0, -3.0, -3.0])
    with tf.Session() as sess:
        trunc, floor = sess.run([tf.truncatemod(x, y), tf.floormod(x, y)])
        ints = sess.run(tf.truncatemod(tf.constant([-7, 7]), tf.constant([3, -3])))
    np.testing.assert_array_equal(trunc, np.fmod([-7.0, 7.0, -7.0], [3.0, -3.0, -3.0]))
    np.testing.assert_array_equal(floor, np.mod([-7.0, 7.0, -7.0], [3.0, -3.0, -3.0]))
    np.testing.assert_array_equal(ints, [-1, 1])
    check_gradient(lambda a, b: tf.truncatemod(a, b), [np.array([-7.3, 7.4, 2.2]), np.array([3.1, -3.2, 1.9])])


def test_converted_inputs_are_named_inside_the_op_scope_as_in_tf():
    g = tf.Graph()
    with g.as_default():
        a = tf.placeholder(tf.float32, [], name="a")
        named = tf.multiply(a, 3.0, name="y")
        default = tf.multiply(a, 2.0)
        v = tf.Variable(1.0, name="v")
        inc = tf.assign_add(v, 1.0, name="inc")
    assert named.op.name == "y" and named.op.inputs[1].op.name == "y/y"
    assert default.op.name == "Mul" and default.op.inputs[1].op.name == "Mul/y"
    assert inc.op.name == "inc" and inc.op.inputs[1].op.name == "inc/value"


# -- tf.math ---------------------------------------------------------------------------
def test_tf_math_names_the_same_functions_as_the_top_level_and_nn():
    for name in ("log", "exp", "reduce_sum", "reduce_mean", "argmax", "squared_difference",
                 "logical_and", "unsorted_segment_sum", "count_nonzero"):
        assert getattr(tf.math, name) is getattr(tf, name), name
    for name in ("softmax", "log_softmax", "softplus", "in_top_k", "l2_normalize"):
        assert getattr(tf.math, name) is getattr(tf.nn, name), name
    assert tf.math.divide_no_nan is tf.div_no_nan
    assert tf.math.log_sigmoid is tf.log_sigmoid


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ([0, 1], False)])
def test_variance_std_and_euclidean_norm_match_numpy(axis, keepdims):
    x = RNG.normal(size=(4, 5)).astype(np.float32)
    np_axis = None if axis is None else tuple(np.atleast_1d(axis))
    var, std, norm = run([tf.math.reduce_variance(x, axis, keepdims=keepdims),
                          tf.math.reduce_std(x, axis, keepdims=keepdims),
                          tf.math.reduce_euclidean_norm(x, axis, keepdims=keepdims)])
    np.testing.assert_allclose(var, np.var(x, axis=np_axis, keepdims=keepdims), rtol=1e-5)
    np.testing.assert_allclose(std, np.std(x, axis=np_axis, keepdims=keepdims), rtol=1e-5)
    np.testing.assert_allclose(norm, np.sqrt(np.sum(x * x, axis=np_axis, keepdims=keepdims)),
                               rtol=1e-5)
    assert var.dtype == np.float32


def test_variance_of_integers_is_refused_as_tf_does():
    with pytest.raises(TypeError, match="floating point"):
        tf.math.reduce_variance(tf.constant([1, 2, 3]))


def test_log_sigmoid_and_l2_normalize_match_numpy_and_stay_finite():
    x = np.array([[-300.0, -2.0, 0.0], [1.5, 3.0, 300.0]], np.float32)
    log_sig, unit_rows, unit_all, zeros = run([
        tf.math.log_sigmoid(x), tf.nn.l2_normalize(x, axis=1), tf.nn.l2_normalize(x),
        tf.nn.l2_normalize(tf.zeros([3]), 0)])
    np.testing.assert_allclose(log_sig, -np.logaddexp(0, -x.astype(np.float64)), rtol=1e-6,
                               atol=1e-7)  # float32 underflows to -0 at x = 300
    assert np.isfinite(log_sig).all()
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(unit_rows, x64 / np.linalg.norm(x64, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(unit_all, x64 / np.linalg.norm(x64), rtol=1e-6)
    np.testing.assert_array_equal(zeros, [0, 0, 0])  # epsilon keeps a zero vector finite


@pytest.mark.parametrize("build", [
    lambda x: tf.math.reduce_variance(x, 1), lambda x: tf.math.reduce_std(x, 0),
    lambda x: tf.math.reduce_euclidean_norm(x), lambda x: tf.math.log_sigmoid(x),
    lambda x: tf.nn.l2_normalize(x, 1),
], ids=["variance", "std", "euclidean_norm", "log_sigmoid", "l2_normalize"])
def test_composite_math_gradients(build):
    check_gradient(build, [RNG.uniform(0.5, 2.0, size=(3, 4))])


def _np_scan(fn, identity, x, axis, exclusive, reverse):
    src = np.flip(x, axis) if reverse else x
    out = fn(src, axis=axis)
    if exclusive:
        out = np.concatenate([np.full_like(np.take(out, [0], axis=axis), identity),
                              np.delete(out, -1, axis=axis)], axis=axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_and_cumprod_match_numpy(axis, exclusive, reverse):
    x = RNG.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)
    got_sum, got_prod = run([tf.cumsum(x, axis, exclusive=exclusive, reverse=reverse),
                             tf.math.cumprod(x, axis, exclusive=exclusive, reverse=reverse)])
    np.testing.assert_allclose(got_sum, _np_scan(np.cumsum, 0, x, axis, exclusive, reverse), rtol=1e-5)
    np.testing.assert_allclose(got_prod, _np_scan(np.cumprod, 1, x, axis, exclusive, reverse), rtol=1e-5)
    assert got_sum.dtype == np.float32
    check_gradient(lambda t: tf.cumsum(t, axis, exclusive=exclusive, reverse=reverse), [x])
    check_gradient(lambda t: tf.cumprod(t, axis, exclusive=exclusive, reverse=reverse), [x])


def test_cumsum_keeps_integer_dtypes_and_refuses_a_bad_axis():
    assert run(tf.cumsum(tf.constant([1, 2, 3]))).tolist() == [1, 3, 6]
    assert run(tf.cumsum(tf.constant([1, 2, 3]))).dtype == np.int32
    with pytest.raises(ValueError, match="out of range"):
        tf.cumsum(tf.zeros([2, 3]), axis=2)
