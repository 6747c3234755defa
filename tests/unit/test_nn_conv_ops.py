"""conv1d/conv3d, depthwise and separable conv2d, dilation, 1-D and 3-D pools,
batch_normalization and fused_batch_norm: kernels against direct numpy sums, gradients
against finite differences (values against TF: tests/goldens/cases_nn_conv.py)."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

RNG = np.random.RandomState(7)


def _direct_conv(x, w, strides, pads_before, out_sizes):
    """Direct sum over an n-d channels-last input (zero padding), for checking kernels."""
    k = w.shape[:-2]
    out = np.zeros((x.shape[0], *out_sizes, w.shape[-1]))
    for o in np.ndindex(*out_sizes):
        for off in np.ndindex(*k):
            src = [oi * s + p - b for oi, s, p, b in zip(o, strides, off, pads_before)]
            if all(0 <= si < n for si, n in zip(src, x.shape[1:-1])):
                out[(slice(None),) + o] += x[(slice(None),) + tuple(src)] @ w[off]
    return out


def test_conv3d_matches_a_direct_sum_and_its_gradients_check():
    x, w = RNG.randn(2, 5, 4, 5, 2), RNG.randn(2, 3, 2, 2, 3)
    y = tf.nn.conv3d(tf.constant(x), tf.constant(w), [1, 2, 1, 2, 1], "SAME")
    assert y.shape.as_list() == [2, 3, 4, 3, 3] and y.op.type == "Conv3D"
    # SAME: depth pads 0 before (total 1), height 1 before (total 2), width 0 (total 1).
    np.testing.assert_allclose(check_against_reference(y),
                               _direct_conv(x, w, (2, 1, 2), (0, 1, 0), (3, 4, 3)), rtol=1e-10)
    check_gradient(lambda a, b: tf.nn.conv3d(a, b, [1, 2, 1, 2, 1], "SAME"), [x[:1], w])
    check_gradient(lambda a, b: tf.nn.conv3d(a, b, [1, 1, 1, 1, 1], "VALID"), [x[:1, :3], w])


def test_conv3d_second_order():
    x, w = RNG.randn(1, 3, 3, 3, 2), RNG.randn(2, 2, 2, 2, 2)
    check_gradient(lambda a, b: tf.gradients(tf.reduce_sum(tf.square(
        tf.nn.conv3d(a, b, [1, 1, 1, 1, 1], "SAME"))), a)[0], [x, w])


def test_depthwise_conv2d_matches_per_channel_convolution():
    x, w = RNG.randn(2, 6, 5, 3), RNG.randn(3, 2, 3, 2)
    y = tf.nn.depthwise_conv2d_native(tf.constant(x), tf.constant(w), [1, 2, 1, 1], "SAME")
    assert y.shape.as_list() == [2, 3, 5, 6]
    got = check_against_reference(y)
    for c in range(3):
        for m in range(2):
            want = _direct_conv(x[..., c:c + 1], w[:, :, c:c + 1, m:m + 1], (2, 1), (0, 0), (3, 5))
            np.testing.assert_allclose(got[..., c * 2 + m], want[..., 0], rtol=1e-10)
    check_gradient(lambda a, b: tf.nn.depthwise_conv2d(a, b, [1, 2, 1, 1], "SAME"), [x[:1], w])
    check_gradient(lambda a, b: tf.gradients(tf.reduce_sum(tf.square(
        tf.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "VALID"))), b)[0], [x[:1], w])


def test_dilation_is_the_zero_filled_filter():
    x, w = RNG.randn(1, 7, 7, 2), RNG.randn(2, 3, 2, 3)
    wd = np.zeros((3, 7, 2, 3))
    wd[::2, ::3] = w
    got = run(tf.nn.conv2d(tf.constant(x), tf.constant(w), [1, 1, 1, 1], "SAME",
                           dilations=[1, 2, 3, 1]))
    want = run(tf.nn.conv2d(tf.constant(x), tf.constant(wd), [1, 1, 1, 1], "SAME"))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(run(tf.nn.atrous_conv2d(tf.constant(x), tf.constant(w), 2, "VALID")),
                               _direct_conv(x, _zero_fill(w, 2), (1, 1), (0, 0), (5, 3)), rtol=1e-10)
    check_gradient(lambda a, b: tf.nn.atrous_conv2d(a, b, 2, "SAME"), [x, w])


def _zero_fill(w, r):
    out = np.zeros(((w.shape[0] - 1) * r + 1, (w.shape[1] - 1) * r + 1, *w.shape[2:]))
    out[::r, ::r] = w
    return out


def test_conv1d_and_separable_conv2d_are_composites_with_gradients():
    x, w = RNG.randn(2, 9, 3), RNG.randn(3, 3, 4)
    y = tf.nn.conv1d(tf.constant(x), tf.constant(w), 2, "VALID")
    assert y.shape.as_list() == [2, 4, 4]
    np.testing.assert_allclose(run(y), _direct_conv(x, w, (2,), (0,), (4,)), rtol=1e-10)
    check_gradient(lambda a, b: tf.nn.conv1d(a, b, 1, "SAME", dilations=2), [x, w])
    xs, d, p = RNG.randn(1, 5, 5, 2), RNG.randn(3, 3, 2, 2), RNG.randn(1, 1, 4, 3)
    check_gradient(lambda a, b, c: tf.nn.separable_conv2d(a, b, c, [1, 1, 1, 1], "SAME"), [xs, d, p])
    with pytest.raises(ValueError, match="pointwise_filter"):
        tf.nn.separable_conv2d(tf.constant(xs), tf.constant(d), tf.constant(RNG.randn(2, 1, 4, 3)),
                               [1, 1, 1, 1], "SAME")


@pytest.mark.parametrize("pool", ["max_pool3d", "avg_pool3d"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pool3d_values_and_gradients(pool, padding):
    x = RNG.permutation(2 * 5 * 4 * 5 * 2).reshape(2, 5, 4, 5, 2).astype(np.float64) / 10
    fn = getattr(tf.nn, pool)
    y = fn(tf.constant(x), [1, 2, 2, 3, 1], [1, 2, 1, 2, 1], padding)
    got = check_against_reference(y)
    reduce = np.max if pool == "max_pool3d" else np.mean
    pt = (0, 0, 1) if padding == "SAME" else (0, 0, 0)
    for (i, j, k) in np.ndindex(*got.shape[1:4]):
        lo = [i * 2 - pt[0], j - pt[1], k * 2 - pt[2]]
        win = x[:, max(lo[0], 0):lo[0] + 2, max(lo[1], 0):lo[1] + 2, max(lo[2], 0):lo[2] + 3]
        np.testing.assert_allclose(got[:, i, j, k], reduce(win, axis=(1, 2, 3)), rtol=1e-10)
    check_gradient(lambda a: fn(a, [1, 2, 2, 3, 1], [1, 2, 1, 2, 1], padding), [x[:1]])


def test_pool1d_and_avg_pool3d_second_order():
    x = RNG.permutation(18).reshape(1, 9, 2).astype(np.float64)
    got = run(tf.nn.max_pool1d(tf.constant(x), 3, 2, "VALID"))
    np.testing.assert_allclose(got[0], [x[0, i:i + 3].max(0) for i in (0, 2, 4, 6)])
    check_gradient(lambda a: tf.nn.avg_pool1d(a, 2, 1, "SAME"), [x])
    x3 = RNG.randn(1, 3, 3, 3, 1)
    check_gradient(lambda a: tf.gradients(tf.reduce_sum(tf.square(
        tf.nn.avg_pool3d(a, 2, 1, "SAME"))), a)[0], [x3])


def test_fused_batch_norm_training_and_inference():
    x = RNG.randn(4, 3, 2, 3) * 2 + 1
    scale, offset = RNG.rand(3) + 0.5, RNG.randn(3)
    y, mean, var = run(tf.nn.fused_batch_norm(tf.constant(x), scale, offset, epsilon=1e-4))
    flat = x.reshape(-1, 3)
    np.testing.assert_allclose(mean, flat.mean(0), rtol=1e-10)
    np.testing.assert_allclose(var, flat.var(0, ddof=1), rtol=1e-10)  # Bessel-corrected
    np.testing.assert_allclose(y, (x - flat.mean(0)) / np.sqrt(flat.var(0) + 1e-4) * scale + offset,
                               rtol=1e-8)
    w = RNG.randn(*x.shape)
    check_gradient(lambda a, s, o: tf.nn.fused_batch_norm(a, s, o)[0] * w, [x, scale, offset])
    m, v = RNG.randn(3), RNG.rand(3) + 0.5
    y, m_out, _ = run(tf.nn.fused_batch_norm(tf.constant(x), scale, offset, m, v, epsilon=0,
                                             is_training=False))
    np.testing.assert_allclose(y, (x - m) / np.sqrt(v + 1.001e-5) * scale + offset, rtol=1e-8)
    np.testing.assert_allclose(m_out, m)
    check_gradient(lambda a, s, o: tf.nn.fused_batch_norm(a, s, o, m, v, is_training=False)[0] * w,
                   [x, scale, offset])


def test_fused_batch_norm_channels_first_and_errors():
    x = RNG.randn(2, 3, 4, 2)
    y_first = run(tf.nn.fused_batch_norm(tf.constant(x), np.ones(3), np.zeros(3),
                                         data_format="NCHW")[0])
    y_last = run(tf.nn.fused_batch_norm(tf.constant(x.transpose(0, 2, 3, 1)), np.ones(3),
                                        np.zeros(3))[0])
    np.testing.assert_allclose(y_first, y_last.transpose(0, 3, 1, 2), rtol=1e-10)
    with pytest.raises(ValueError, match="mean and variance"):
        tf.nn.fused_batch_norm(tf.constant(x), np.ones(2), np.zeros(2), is_training=False)
    with pytest.raises(ValueError, match="data_format"):
        tf.nn.fused_batch_norm(tf.constant(x), np.ones(2), np.zeros(2), data_format="NWHC")


def test_batch_normalization_and_gradients():
    x, m, v = RNG.randn(3, 4), RNG.randn(4), RNG.rand(4) + 0.5
    o, s = RNG.randn(4), RNG.randn(4)
    got = run(tf.nn.batch_normalization(tf.constant(x), m, v, o, s, 1e-3))
    np.testing.assert_allclose(got, (x - m) / np.sqrt(v + 1e-3) * s + o, rtol=1e-10)
    check_gradient(lambda *t: tf.nn.batch_normalization(*t, 1e-3) * x, [x, m, v, o, s])


def test_layout_and_argument_errors_name_the_argument():
    x5 = tf.placeholder(tf.float32, [1, 4, 4, 4, 2])
    w5 = tf.placeholder(tf.float32, [2, 2, 2, 2, 3])
    with pytest.raises(ValueError, match="data_format 'NCDHW'"):
        tf.nn.conv3d(x5, w5, [1, 1, 1, 1, 1], "SAME", data_format="NCDHW")
    with pytest.raises(ValueError, match="padding"):
        tf.nn.conv3d(x5, w5, [1, 1, 1, 1, 1], "same")
    with pytest.raises(ValueError, match="Dimensions must be equal"):
        tf.nn.conv3d(x5, tf.placeholder(tf.float32, [2, 2, 2, 3, 3]), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="strides > 1 not supported"):
        tf.nn.conv2d(tf.placeholder(tf.float32, [1, 5, 5, 1]), tf.ones([2, 2, 1, 1]),
                     [1, 2, 2, 1], "SAME", dilations=2)
    with pytest.raises(ValueError, match="negative"):
        tf.nn.max_pool3d(x5, [1, 5, 1, 1, 1], 1, "VALID")


def test_conv3d_and_depthwise_dilation_are_the_zero_filled_filter():
    x, w = RNG.randn(1, 5, 5, 5, 2), RNG.randn(2, 2, 3, 2, 2)
    wd = np.zeros((3, 2, 5, 2, 2))
    wd[::2, :, ::2] = w
    got = run(tf.nn.conv3d(tf.constant(x), tf.constant(w), [1, 1, 1, 1, 1], "SAME",
                           dilations=[1, 2, 1, 2, 1]))
    np.testing.assert_allclose(got, run(tf.nn.conv3d(tf.constant(x), tf.constant(wd),
                                                     [1, 1, 1, 1, 1], "SAME")), rtol=1e-12)
    check_gradient(lambda a, b: tf.nn.conv3d(a, b, [1, 1, 1, 1, 1], "VALID",
                                             dilations=[1, 2, 1, 1, 1]), [x[:, :4, :3, :3], w])
    x2, w2 = RNG.randn(1, 6, 6, 2), RNG.randn(2, 2, 2, 3)
    with pytest.raises(ValueError, match="strides > 1 not supported"):
        tf.nn.depthwise_conv2d(tf.constant(x2), tf.constant(w2), [1, 2, 2, 1], "SAME", rate=2)
    check_gradient(lambda a, b: tf.nn.depthwise_conv2d(a, b, [1, 1, 1, 1], "SAME", rate=[2, 1]),
                   [x2, w2])


@pytest.mark.parametrize("rank", [2, 3])
def test_max_pool_second_order_gradients(rank):
    shape = (1, 4, 5, 2) if rank == 2 else (1, 3, 4, 3, 2)
    x = RNG.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) / 10
    pool = tf.nn.max_pool if rank == 2 else tf.nn.max_pool3d
    ksize, strides = [1] + [2] * rank + [1], [1] + [1] * rank + [1]
    y_shape = run(pool(tf.constant(x), ksize, strides, "SAME")).shape
    u, c = RNG.randn(*y_shape), RNG.randn(*shape)

    def double_backprop(a, b):
        first = tf.gradients(tf.reduce_sum(pool(a, ksize, strides, "SAME") * b), a)[0]
        return first * c

    check_gradient(double_backprop, [x, u])
    # and one order further: the gradient of MaxPool(3D)GradGrad is the pool's gradient
    check_gradient(lambda a, b: tf.gradients(tf.reduce_sum(double_backprop(a, b)), b)[0] * u,
                   [x, u])
