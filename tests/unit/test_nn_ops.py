import numpy as np
import pytest

import dtf as tf
from dtf.kernels import registry
from dtf.kernels.reference import REFERENCE
from dtf.framework.common_shapes import window_geometry
from tests.opcheck import check_against_reference, check_gradient, run

RNG = np.random.default_rng(42)


def _away_from(values, kinks, margin=0.05):
    """Random values nudged off the activation's kinks so finite differences are exact."""
    out = np.array(values, dtype=np.float64)
    for k in kinks:
        close = np.abs(out - k) < margin
        out[close] = k + margin * 2
    return out


# -- activations ---------------------------------------------------------------------------------------
ACTIVATION_CASES = [
    ("relu", lambda x: np.maximum(x, 0), [0.0]),
    ("relu6", lambda x: np.clip(x, 0, 6), [0.0, 6.0]),
    ("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x), [0.0]),
    ("elu", lambda x: np.where(x < 0, np.expm1(x), x), [0.0]),
    ("softplus", lambda x: np.log1p(np.exp(x)), []),
    ("softsign", lambda x: x / (1 + np.abs(x)), []),
]


@pytest.mark.parametrize("name,ref,kinks", ACTIVATION_CASES)
def test_activation_forward_and_gradient(name, ref, kinks):
    x = _away_from(RNG.uniform(-8, 8, size=(3, 5)), kinks)
    fn = getattr(tf.nn, name)
    y = fn(tf.constant(x.astype(np.float32)))
    np.testing.assert_allclose(check_against_reference(y), ref(x), rtol=1e-5, atol=1e-6)
    check_gradient(lambda t: fn(t) * 1.5, [x])


def test_activation_op_names_and_second_order():
    x = tf.placeholder(tf.float32, [2])
    assert tf.nn.relu(x).op.name == "Relu"
    assert tf.nn.leaky_relu(x).op.name == "LeakyRelu"
    assert tf.nn.leaky_relu(x).op.get_attr("alpha") == pytest.approx(0.2)
    check_gradient(lambda t: tf.gradients(tf.nn.relu(t) * t, t)[0] * t, [np.array([-1.0, 2.0])])


# -- softmax --------------------------------------------------------------------------------------------
def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0])
def test_softmax_and_log_softmax(axis):
    x = RNG.normal(size=(3, 4))
    s = tf.nn.softmax(tf.constant(x), axis=axis)
    ls = tf.nn.log_softmax(tf.constant(x), axis=axis)
    got_s, got_ls = run([s, ls])
    np.testing.assert_allclose(got_s, _np_softmax(x, axis), rtol=1e-6)
    np.testing.assert_allclose(got_ls, np.log(_np_softmax(x, axis)), rtol=1e-6)
    w = RNG.normal(size=(3, 4))
    check_gradient(lambda t: tf.nn.softmax(t, axis=axis) * w, [x])
    check_gradient(lambda t: tf.nn.log_softmax(t, axis=axis) * w, [x])


def test_softmax_names_and_errors():
    assert tf.nn.softmax(tf.placeholder(tf.float32, [2, 3])).op.type == "Softmax"
    with pytest.raises(ValueError, match="Softmax"):
        tf.nn.softmax(tf.constant(1.0))
    with pytest.raises(ValueError, match="both"):
        tf.nn.softmax(tf.placeholder(tf.float32, [2, 3]), axis=0, dim=0)


# -- bias_add, l2_loss --------------------------------------------------------------------------------------
def test_bias_add_and_l2_loss():
    x, b = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(4,))
    y = tf.nn.bias_add(tf.constant(x), tf.constant(b))
    assert y.op.name == "BiasAdd"
    np.testing.assert_allclose(check_against_reference(y), x + b)
    check_gradient(lambda t, c: tf.nn.bias_add(t, c) * x, [x, b])
    loss = tf.nn.l2_loss(tf.constant(x))
    assert loss.op.name == "L2Loss" and loss.shape.ndims == 0
    assert run(loss) == pytest.approx(np.sum(x ** 2) / 2)
    check_gradient(lambda t: tf.nn.l2_loss(t), [x])


def test_bias_add_shape_errors():
    with pytest.raises(ValueError, match="BiasAdd"):
        tf.nn.bias_add(tf.placeholder(tf.float32, [2, 3]), tf.placeholder(tf.float32, [4]))
    with pytest.raises(ValueError, match="rank 1"):
        tf.nn.bias_add(tf.placeholder(tf.float32, [2, 3]), tf.placeholder(tf.float32, [1, 3]))


def test_bias_add_grad_grad():
    x = RNG.normal(size=(2, 3))
    check_gradient(lambda t: tf.gradients(tf.nn.bias_add(t, tf.zeros([3], tf.float64)) * t * t,
                                          t)[0], [x])


# -- cross-entropies -------------------------------------------------------------------------------------------
def _uses_numba(op_type, dtype="float32"):
    return registry.lookup(op_type, "CPU", dtype).label.startswith("numba")


def test_softmax_cross_entropy_forward_and_kernel():
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    labels = _np_softmax(RNG.normal(size=(5, 4))).astype(np.float32)
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    xent_op = loss.op
    assert xent_op.type == "SoftmaxCrossEntropyWithLogits" and _uses_numba(xent_op.type)
    want = -np.sum(labels * np.log(_np_softmax(logits.astype(np.float64))), axis=-1)
    np.testing.assert_allclose(check_against_reference(loss), want, rtol=1e-5)
    check_against_reference(xent_op.outputs[1])


def test_softmax_cross_entropy_gradients():
    logits, labels = RNG.normal(size=(3, 4)), _np_softmax(RNG.normal(size=(3, 4)))
    check_gradient(lambda lg, lb: tf.nn.softmax_cross_entropy_with_logits_v2(labels=lb, logits=lg),
                   [logits, labels])
    lg = tf.placeholder(tf.float64, [3, 4])
    lb = tf.placeholder(tf.float64, [3, 4])
    loss = tf.nn.softmax_cross_entropy_with_logits(labels=lb, logits=lg)
    g_logits, g_labels = tf.gradients(loss, [lg, lb])
    assert g_labels is None
    got = run(g_logits, {lg: logits, lb: labels})
    np.testing.assert_allclose(got, _np_softmax(logits) - labels, rtol=1e-6)


def test_softmax_cross_entropy_rank3_and_second_order():
    logits, labels = RNG.normal(size=(2, 2, 3)), _np_softmax(RNG.normal(size=(2, 2, 3)))
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert loss.shape.as_list() == [2, 2]
    check_gradient(lambda lg: tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=lg),
                   [logits])
    lab2 = labels.reshape(4, 3)
    check_gradient(lambda lg: tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=lab2, logits=lg), lg)[0] * lab2, [logits.reshape(4, 3)])


def test_xent_argument_errors():
    with pytest.raises(ValueError, match="named arguments"):
        tf.nn.softmax_cross_entropy_with_logits([1.0], [1.0])
    with pytest.raises(ValueError, match="Both labels and logits"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(logits=[[1.0]])


def test_sparse_softmax_cross_entropy():
    logits = RNG.normal(size=(4, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 2], np.int32)
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.op.type == "SparseSoftmaxCrossEntropyWithLogits"
    assert _uses_numba(loss.op.type)
    want = -np.log(_np_softmax(logits.astype(np.float64)))[np.arange(4), labels]
    np.testing.assert_allclose(check_against_reference(loss), want, rtol=1e-5)
    check_against_reference(loss.op.outputs[1])
    check_gradient(lambda lg: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels.astype(np.int64), logits=lg), [logits.astype(np.float64)])


def test_sparse_softmax_cross_entropy_rank3():
    logits, labels = RNG.normal(size=(2, 3, 4)), RNG.integers(0, 4, size=(2, 3))
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    want = -np.log(_np_softmax(logits))[np.arange(2)[:, None], np.arange(3), labels]
    np.testing.assert_allclose(run(loss), want, rtol=1e-6)


def test_sparse_label_out_of_range_and_rank_mismatch():
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.constant([0, 5]), logits=tf.constant(np.zeros((2, 3), np.float32)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"label value of 5.*\[0, 3\)"):
        run(loss)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"label value of -1.*\[0, 3\)"):
        REFERENCE["SparseSoftmaxCrossEntropyWithLogits"]({}, np.zeros((2, 3)), np.array([-1, 0]))
    with pytest.raises(ValueError, match="Rank mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[0]], logits=[[1.0]])


def test_sigmoid_cross_entropy():
    x = np.array([[-100.0, -2.0, 0.0, 3.0, 100.0]])
    z = np.array([[0.0, 1.0, 0.5, 0.2, 1.0]])
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    assert loss.op.name == "logistic_loss"
    want = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(run(loss), want, rtol=1e-6)
    assert np.all(np.isfinite(run(loss)))
    check_gradient(lambda a, b: tf.nn.sigmoid_cross_entropy_with_logits(labels=b, logits=a),
                   [RNG.normal(size=(2, 3)) + 0.3, RNG.uniform(size=(2, 3))])
    with pytest.raises(ValueError, match="same shape"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[1.0])


# -- conv2d ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_size,k,s,padding,want", [
    (5, 3, 2, "SAME", (3, 1, 1)), (4, 3, 2, "SAME", (2, 0, 1)), (28, 3, 1, "SAME", (28, 1, 1)),
    (6, 2, 2, "SAME", (3, 0, 0)), (7, 3, 2, "VALID", (3, 0, 0)), (6, 3, 2, "VALID", (2, 0, 0)),
])
def test_window_geometry_matches_tf(in_size, k, s, padding, want):
    assert window_geometry(in_size, k, s, padding) == want


CONV_CASES = [((2, 7, 6, 3), (3, 3, 3, 4), [1, 1, 1, 1], "SAME"),
              ((2, 7, 6, 3), (3, 2, 3, 4), [1, 2, 2, 1], "SAME"),
              ((1, 8, 7, 2), (3, 3, 2, 5), [1, 2, 3, 1], "VALID"),
              ((3, 5, 5, 1), (5, 5, 1, 2), 1, "VALID")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape,w_shape,strides,padding", CONV_CASES)
def test_conv2d_kernels_match_reference(x_shape, w_shape, strides, padding, dtype):
    x = tf.constant(RNG.normal(size=x_shape).astype(dtype))
    w = tf.constant(RNG.normal(size=w_shape).astype(dtype))
    y = tf.nn.conv2d(x, w, strides=strides, padding=padding)
    assert y.op.name == "Conv2D"
    assert _uses_numba("Conv2DBackpropInput", y.dtype) and _uses_numba("Conv2DBackpropFilter", y.dtype)
    got = check_against_reference(y, rtol=1e-4, atol=1e-4)
    assert list(got.shape) == y.shape.as_list()
    dy = tf.constant(RNG.normal(size=got.shape).astype(dtype))
    gx, gw = tf.gradients(y, [x, w], grad_ys=[dy])
    assert (gx.op.type, gw.op.type) == ("Conv2DBackpropInput", "Conv2DBackpropFilter")
    check_against_reference(gx, rtol=1e-4, atol=1e-4)
    check_against_reference(gw, rtol=1e-4, atol=1e-3)


def test_conv2d_against_direct_sum():
    x, w = RNG.normal(size=(1, 4, 5, 2)), RNG.normal(size=(3, 3, 2, 3))
    got = run(tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME"))
    # Rows: 4 -> 2 outputs, padding (0, 1); columns: 5 -> 3 outputs, padding (1, 1).
    xp = np.pad(x, ((0, 0), (0, 1), (1, 1), (0, 0)))
    want = np.array([[[np.einsum("pqc,pqco->o", xp[0, 2 * i:2 * i + 3, 2 * j:2 * j + 3], w)
                       for j in range(3)] for i in range(2)]])
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("strides,padding", [([1, 1, 1, 1], "SAME"), ([1, 2, 2, 1], "VALID"),
                                             ([1, 2, 1, 1], "SAME")])
def test_conv2d_gradients(strides, padding):
    x, w = RNG.normal(size=(2, 5, 4, 2)), RNG.normal(size=(2, 3, 2, 3))
    check_gradient(lambda a, b: tf.nn.conv2d(a, b, strides=strides, padding=padding), [x, w])


def test_conv2d_transpose_and_second_order():
    value, w = RNG.normal(size=(1, 3, 3, 2)), RNG.normal(size=(3, 3, 4, 2))
    y = tf.nn.conv2d_transpose(value, w, [1, 6, 6, 4], strides=[1, 2, 2, 1])
    assert y.op.type == "Conv2DBackpropInput" and y.shape.as_list() == [1, 6, 6, 4]
    check_gradient(lambda v, f: tf.nn.conv2d_transpose(v, f, [1, 6, 6, 4], [1, 2, 2, 1]), [value, w])
    x = RNG.normal(size=(1, 4, 4, 2))
    check_gradient(lambda f: tf.gradients(tf.nn.conv2d(x, f, [1, 2, 2, 1], "SAME") ** 2, f)[0], [w[..., :2, :]])


def test_conv2d_errors():
    x = tf.placeholder(tf.float32, [32, 28, 28, 16])
    with pytest.raises(ValueError, match=r"Conv2D.*\[32,28,28,16\], \[3,3,3,32\]"):
        tf.nn.conv2d(x, tf.placeholder(tf.float32, [3, 3, 3, 32]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="padding"):
        tf.nn.conv2d(x, tf.placeholder(tf.float32, [3, 3, 16, 32]), [1, 1, 1, 1], "same")
    with pytest.raises(ValueError, match="padding"):
        tf.nn.max_pool(x, 2, 2, "FULL")
    with pytest.raises(ValueError, match="rank 4"):
        tf.nn.conv2d(tf.placeholder(tf.float32, [28, 28, 16]),
                     tf.placeholder(tf.float32, [3, 3, 16, 32]), 1, "SAME")
    with pytest.raises(ValueError, match="negative"):
        tf.nn.conv2d(tf.placeholder(tf.float32, [1, 2, 2, 16]),
                     tf.placeholder(tf.float32, [3, 3, 16, 32]), 1, "VALID")


# -- pooling --------------------------------------------------------------------------------------------------
POOL_CASES = [((2, 6, 5, 3), 2, 2, "VALID"), ((2, 6, 5, 3), 3, 2, "SAME"),
              ((1, 7, 7, 2), [3, 2], [2, 1], "SAME"), ((2, 4, 4, 1), 3, 1, "VALID")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pool", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("shape,ksize,strides,padding", POOL_CASES)
def test_pool_kernels_match_reference(pool, shape, ksize, strides, padding, dtype):
    x = tf.constant(RNG.normal(size=shape).astype(dtype))
    y = getattr(tf.nn, pool)(x, ksize, strides, padding)
    assert _uses_numba(y.op.type, y.dtype)
    got = check_against_reference(y)
    assert list(got.shape) == y.shape.as_list()
    dy = tf.constant(RNG.normal(size=got.shape).astype(dtype))
    check_against_reference(tf.gradients(y, x, grad_ys=dy)[0])


@pytest.mark.parametrize("pool", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("shape,ksize,strides,padding", POOL_CASES[:3])
def test_pool_gradients(pool, shape, ksize, strides, padding):
    x = RNG.permutation(np.prod(shape)).reshape(shape) * 0.1  # distinct: no ties
    check_gradient(lambda t: getattr(tf.nn, pool)(t, ksize, strides, padding) ** 2, [x])


def test_pool_values_and_tie_breaking():
    x = np.array([[1, 3, 3, 0], [2, 3, 1, 5], [0, 0, 4, 4], [1, 1, 4, 4]], np.float32).reshape(1, 4, 4, 1)
    xt = tf.constant(x)
    mp = tf.nn.max_pool(xt, 2, 2, "VALID")
    ap = tf.nn.avg_pool(xt, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    assert (mp.op.name, ap.op.name) == ("MaxPool", "AvgPool")
    got_mp, got_ap, g = run([mp, ap, tf.gradients(mp, xt)[0]])
    np.testing.assert_array_equal(got_mp[0, :, :, 0], [[3, 5], [1, 4]])
    # SAME avg: windows at the border average only the real pixels.
    # (4 -> 2 outputs, padding (0, 1): the second window covers rows 2..3 only).
    np.testing.assert_allclose(got_ap[0, :, :, 0], [[x[0, :3, :3].mean(), x[0, :3, 2:].mean()],
                                                  [x[0, 2:, :3].mean(), x[0, 2:, 2:].mean()]], rtol=1e-6)
    # Ties: the first maximum in row-major order gets the gradient.
    np.testing.assert_array_equal(g[0, :, :, 0], [[0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0], [1, 0, 0, 0]])


def test_avg_pool_second_order():
    x = RNG.normal(size=(1, 4, 4, 1))
    check_gradient(lambda t: tf.gradients(tf.nn.avg_pool(t, 2, 2, "VALID") ** 2, t)[0], [x])


# -- dropout, moments, in_top_k ------------------------------------------------------------------------------------
def test_dropout_keeps_scales_and_zeroes():
    x = np.ones((200, 50), np.float32)
    y = tf.nn.dropout(tf.constant(x), keep_prob=0.5, seed=1)
    assert y.shape.as_list() == [200, 50] and y.op.name == "dropout/mul_1"
    got = run(y)
    assert set(np.unique(got)) <= {0.0, 2.0}
    assert 0.45 < np.mean(got == 2.0) < 0.55
    assert tf.nn.dropout(tf.constant(x), keep_prob=1.0).op.type == "Const"


def test_dropout_with_tensor_rate_and_noise_shape():
    keep = tf.placeholder(tf.float32, [])
    y = tf.nn.dropout(tf.ones([4, 100]), keep_prob=keep, noise_shape=[1, 100])
    got = run(y, {keep: 0.25})
    np.testing.assert_array_equal(got, np.broadcast_to(got[:1], got.shape))
    assert set(np.unique(got)) <= {0.0, 4.0}
    np.testing.assert_array_equal(run(y, {keep: 1.0}), np.ones((4, 100)))


def test_dropout_gradient_and_errors():
    x = tf.placeholder(tf.float32, [50])
    y = tf.nn.dropout(x, rate=0.5, seed=3)
    out, g = run([y, tf.gradients(y, x)[0]], {x: np.ones(50)})
    np.testing.assert_allclose(g, out)
    with pytest.raises(ValueError, match="range"):
        tf.nn.dropout(x, rate=1.0)
    with pytest.raises(ValueError, match="both"):
        tf.nn.dropout(x, keep_prob=0.5, rate=0.5)
    with pytest.raises(ValueError, match="floating point"):
        tf.nn.dropout(tf.constant([1, 2]), 0.5)


def test_moments():
    x = RNG.normal(size=(4, 3))
    mean, var = tf.nn.moments(tf.constant(x), axes=[0])
    got_m, got_v = run([mean, var])
    np.testing.assert_allclose(got_m, x.mean(0))
    np.testing.assert_allclose(got_v, x.var(0))
    assert tf.nn.moments(tf.constant(x), [1], keep_dims=True)[1].shape.as_list() == [4, 1]
    check_gradient(lambda t: tf.nn.moments(t, [0, 1])[1], [x])


def test_in_top_k():
    pred = np.array([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.2, 0.7, 0.1], [0.5, 0.2, 0.3]], np.float32)
    targets = np.array([2, 0, 0, 7])
    t = tf.nn.in_top_k(pred, targets, 2)
    assert t.op.type == "InTopKV2" and t.dtype == tf.bool
    # Row 1: 0.3 ties with another 0.3 at the boundary, so both count as in the top 2.
    np.testing.assert_array_equal(run(t), [True, True, True, False])


def test_top_k_takes_the_largest_first_and_ties_by_lower_index():
    x = np.array([[1.0, 5.0, 3.0, 5.0], [2.0, -1.0, 9.0, 0.5]], np.float32)
    values, indices = tf.nn.top_k(x, 3)
    assert values.shape.as_list() == [2, 3] and indices.dtype == tf.int32
    got_values, got_indices = run([values, indices])
    np.testing.assert_array_equal(got_indices, [[1, 3, 2], [2, 0, 3]])
    np.testing.assert_array_equal(got_values, [[5, 5, 3], [9, 2, 0.5]])
    assert tf.math.top_k is tf.nn.top_k
    batched = np.random.default_rng(1).normal(size=(2, 3, 6)).astype(np.float32)
    got = run(tf.nn.top_k(batched, 6).values)
    np.testing.assert_array_equal(got, -np.sort(-batched, axis=-1))


def test_top_k_gradient_reaches_the_entries_taken():
    x = np.random.default_rng(2).permutation(12).reshape(3, 4).astype(np.float64) / 4
    check_gradient(lambda t: tf.nn.top_k(t, 2).values * tf.constant([[1.0, 3.0]], tf.float64), [x])


def test_top_k_refuses_more_than_a_row_holds():
    with pytest.raises(ValueError, match="at least k=5 columns"):
        tf.nn.top_k(tf.zeros([2, 4]), 5)
