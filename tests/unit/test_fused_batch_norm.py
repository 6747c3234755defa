"""FusedBatchNorm/V3 and FusedBatchNormGrad/V3: the Numba kernels against the numpy
reference (one chunk and many, float32 and float64), the reference against direct numpy
formulas, TF's extra outputs (reserve spaces, V3's empty one), the layouts, second
derivatives against finite differences, and bad input. Values against TF:
tests/goldens/cases_nn_norm.py."""
import numpy as np
import pytest

import dtf as tf
from dtf.kernels.reference import REFERENCE
from tests.opcheck import check_gradient, run

RNG = np.random.RandomState(3)


def _op(x, scale, offset, mean=None, variance=None, **kw):
    y = tf.nn.fused_batch_norm(x, scale, offset, mean, variance, **kw)[0]
    return y.op


def _direct(x, mean, var, scale, offset, eps):
    return (x - mean) / np.sqrt(var + eps) * scale + offset


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (64, 32, 32, 16), (3, 2, 2, 2, 7),
                                   (9, 33, 40, 13)])  # two chunks, ragged periods
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_training_forward_and_gradient_kernels_match_the_reference(shape, dtype):
    c = shape[-1]
    xv = (RNG.randn(*shape) * 3 + 5).astype(dtype)
    scale, offset = (RNG.rand(c) + 0.5).astype(dtype), RNG.randn(c).astype(dtype)
    dyv = RNG.randn(*shape).astype(dtype)
    x = tf.placeholder(dtype, shape)
    op = _op(x, scale, offset, epsilon=1e-3)
    dx, ds, do = tf.gradients(op.outputs[0], [x, op.inputs[1], op.inputs[2]], grad_ys=[tf.constant(dyv)])
    got = run(list(op.outputs) + [dx, ds, do], {x: xv})
    want = REFERENCE["FusedBatchNormV3"](op.attrs, xv, scale, offset, np.zeros(0, dtype),
                                         np.zeros(0, dtype))
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for g, w in zip(got[:6], want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **tol)
    grad_op = dx.op
    assert grad_op.type == "FusedBatchNormGradV3"
    want_g = REFERENCE["FusedBatchNormGradV3"](grad_op.attrs, dyv, xv, scale, *want[3:6])
    for g, w in zip(got[6:], want_g[:3]):
        np.testing.assert_allclose(g, w, rtol=tol["rtol"] * 10, atol=tol["atol"] * 10 * np.abs(w).max())
    # The reference against the formulas.
    flat = xv.astype(np.float64).reshape(-1, c)
    m, v = flat.mean(0), flat.var(0)
    np.testing.assert_allclose(want[0], _direct(xv, m, v, scale, offset, 1e-3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(want[2], flat.var(0, ddof=1), rtol=1e-5)  # Bessel-corrected
    np.testing.assert_allclose(want[4], v, rtol=1e-5)  # reserve_space_2: biased
    assert want[5].shape == (0,)


def test_inference_outputs_the_given_statistics_and_its_gradient_ignores_the_batch():
    xv = RNG.randn(4, 3, 3, 6).astype(np.float32)
    scale, offset = RNG.rand(6).astype(np.float32) + 0.5, RNG.randn(6).astype(np.float32)
    mean, var = RNG.randn(6).astype(np.float32), RNG.rand(6).astype(np.float32) + 0.2
    dyv = RNG.randn(4, 3, 3, 6).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    op = _op(x, scale, offset, mean, var, epsilon=1e-3, is_training=False)
    dx, ds, do = tf.gradients(op.outputs[0], [x, op.inputs[1], op.inputs[2]], grad_ys=[tf.constant(dyv)])
    y, bm, bv, r1, r2, r3, dxv, dsv, dov = run(list(op.outputs) + [dx, ds, do], {x: xv})
    np.testing.assert_allclose(y, _direct(xv, mean, var, scale, offset, 1e-3), rtol=1e-5, atol=1e-5)
    for got in (bm, r1):
        np.testing.assert_array_equal(got, mean)
    for got in (bv, r2):
        np.testing.assert_array_equal(got, var)
    assert r3.shape == (0,)
    inv = 1 / np.sqrt(var + 1e-3)
    np.testing.assert_allclose(dxv, dyv * scale * inv, rtol=1e-5)
    np.testing.assert_allclose(dsv, (dyv * (xv - mean) * inv).reshape(-1, 6).sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dov, dyv.reshape(-1, 6).sum(0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("training", [True, False])
def test_channels_first_matches_channels_last(training):
    xv = RNG.randn(2, 5, 4, 3).astype(np.float32)  # NCHW, 5 channels
    scale, offset = RNG.rand(5).astype(np.float32) + 0.5, RNG.randn(5).astype(np.float32)
    stats = {} if training else dict(mean=RNG.randn(5).astype(np.float32),
                                     variance=RNG.rand(5).astype(np.float32) + 0.5)
    w = RNG.randn(*xv.shape).astype(np.float32)
    outs = []
    for fmt, xin, wv in (("NCHW", xv, w), ("NHWC", xv.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1))):
        with tf.Graph().as_default():
            x = tf.constant(xin)
            y = tf.nn.fused_batch_norm(x, scale, offset, is_training=training, data_format=fmt,
                                       **stats)[0]
            outs.append(run([y] + tf.gradients(tf.reduce_sum(y * wv), [x])))
    np.testing.assert_allclose(outs[0][0], outs[1][0].transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[0][1], outs[1][1].transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("training", [True, False])
def test_second_derivatives_match_finite_differences(training):
    x = RNG.randn(3, 2, 2, 3) + 1
    scale, offset = RNG.rand(3) + 0.5, RNG.randn(3)
    stats = {} if training else dict(mean=RNG.randn(3), variance=RNG.rand(3) + 0.5)
    w = RNG.randn(*x.shape)

    def first_grad(a, s, o):
        y = tf.nn.fused_batch_norm(a, s, o, is_training=training, **stats)[0]
        dx, ds = tf.gradients(tf.reduce_sum(y * w), [a, s])
        return tf.reduce_sum(dx * dx) + tf.reduce_sum(ds * ds)

    check_gradient(first_grad, [x, scale, offset], rtol=2e-3, atol=2e-4)


def test_half_precision_computes_in_float32():
    xv = RNG.randn(2, 3, 3, 4).astype(np.float16)
    y, m, v = run(tf.nn.fused_batch_norm(tf.constant(xv), np.ones(4), np.zeros(4)))
    assert y.dtype == np.float16 and m.dtype == np.float32 and v.dtype == np.float32
    flat = xv.astype(np.float64).reshape(-1, 4)
    np.testing.assert_allclose(y, (xv - flat.mean(0)) / np.sqrt(flat.var(0) + 1e-3), atol=3e-3)


def test_bad_channel_vectors_are_named():
    with pytest.raises(ValueError, match="scale"):
        tf.nn.fused_batch_norm(tf.zeros([2, 2, 2, 3]), np.ones(4), np.zeros(3))
    x = tf.placeholder(tf.float32, [None, 2, 2, None])
    y = tf.nn.fused_batch_norm(x, tf.placeholder(tf.float32, [None]), np.zeros(3))[0]
    scale = y.op.inputs[1]
    with pytest.raises(tf.errors.InvalidArgumentError, match="scale"):
        run(y, {x: np.zeros((2, 2, 2, 3), np.float32), scale: np.ones(4, np.float32)})
    with pytest.raises(ValueError, match="4-dimensional"):
        tf.nn.fused_batch_norm(tf.zeros([2, 3]), np.ones(3), np.zeros(3))


def _traced_ops(sess, fetches, feeds):
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    meta = tf.RunMetadata()
    values = sess.run(fetches, feeds, options=options, run_metadata=meta)
    labels = [s.timeline_label for d in meta.step_stats.dev_stats for s in d.node_stats]
    return values, labels


@pytest.mark.parametrize("training", [True, False])
def test_relu_grad_runs_inside_the_batch_norm_gradient(training):
    shape = (8, 16, 16, 16)  # two row chunks
    xv = RNG.randn(*shape).astype(np.float32) + 0.3
    scale, offset = RNG.rand(16).astype(np.float32) + 0.5, RNG.randn(16).astype(np.float32)
    stats = {} if training else dict(mean=RNG.randn(16).astype(np.float32) * 0.1,
                                     variance=RNG.rand(16).astype(np.float32) + 0.5)
    w = RNG.randn(*shape).astype(np.float32)
    x = tf.placeholder(tf.float32, shape)
    s = tf.Variable(scale)
    y = tf.nn.fused_batch_norm(x, s, offset, is_training=training, **stats)[0]
    r = tf.nn.relu(y)
    dx, ds = tf.gradients(tf.reduce_sum(r * w), [x, s])
    dy = dx.op.inputs[0]  # the ReluGrad's output
    assert dy.op.type == "ReluGrad"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        (dxv, dsv, yv), labels = _traced_ops(sess, [dx, ds, y], {x: xv})
        # One step for both: the ReluGrad runs no kernel of its own.
        assert not any("= ReluGrad(" in label for label in labels)
        # Fetching the ReluGrad's output keeps it a step of its own; same values.
        (dxu, dsu, dyv), labels = _traced_ops(sess, [dx, ds, dy], {x: xv})
        assert any("= ReluGrad(" in label for label in labels)
        reserve = sess.run(list(dx.op.inputs[3:]), {x: xv})
        # Not fetching y: the batch norm applies the relu itself; the same values.
        r_fused, dx_fused = sess.run([r, dx], {x: xv})
    np.testing.assert_array_equal(r_fused, np.maximum(yv, 0))
    np.testing.assert_allclose(dx_fused, dxv, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dyv, w * (yv > 0))
    grad_op = dx.op
    want = REFERENCE[grad_op.type](grad_op.attrs, dyv, xv, scale, *reserve)
    for got in ((dxv, dsv), (dxu, dsu)):
        np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-3)


def test_a_later_tf_exponential_avg_factor_is_refused_by_name():
    x, v = np.zeros((1, 2, 2, 3), np.float32), np.ones(3, np.float32)
    with pytest.raises(tf.errors.UnimplementedError, match="exponential_avg_factor"):
        REFERENCE["FusedBatchNormV3"]({"exponential_avg_factor": 0.5, "is_training": True}, x, v, v,
                                      v, v)


@pytest.mark.parametrize("fmt,h_shape", [("NHWC", (4, 8, 8, 16)), ("NHWC", (16,)),
                                         ("NCHW", (4, 16, 8, 8))])
def test_residual_add_and_relu_after_a_batch_norm_match_numpy(fmt, h_shape):
    """relu(batch_norm(x) + h): the batch norm's pass adds h and applies the relu when it
    can (same shape, channels last); a broadcast h or channels first run the ops as usual."""
    shape = (4, 8, 8, 16) if fmt == "NHWC" else (4, 16, 8, 8)
    xv = RNG.randn(*shape).astype(np.float32) * 2 + 1
    hv = RNG.randn(*h_shape).astype(np.float32)
    w = RNG.randn(*shape).astype(np.float32)
    x, h = tf.placeholder(tf.float32, shape), tf.placeholder(tf.float32, [None] * len(h_shape))
    y = tf.nn.fused_batch_norm(x, np.ones(16, np.float32), np.zeros(16, np.float32),
                               data_format=fmt)[0]
    r = tf.nn.relu(y + h)
    dx, dh = tf.gradients(tf.reduce_sum(r * w), [x, h])
    axes = (0, 1, 2) if fmt == "NHWC" else (0, 2, 3)
    keep = dict(axis=axes, keepdims=True)
    yv = (xv - xv.mean(**keep)) / np.sqrt(xv.var(**keep) + 1e-3)
    want = np.maximum(yv + hv, 0)
    with tf.Session() as sess:
        for _ in range(2):  # the second run reuses the plan
            rv, dxv, dhv = sess.run([r, dx, dh], {x: xv, h: hv})
            np.testing.assert_allclose(rv, want, rtol=1e-4, atol=1e-4)
            assert type(rv) is np.ndarray
            mask = w * (want > 0)
            np.testing.assert_allclose(dhv, mask.sum(axis=tuple(range(len(shape) - len(h_shape))))
                                       if len(h_shape) == 1 else mask, rtol=1e-4, atol=1e-4)
        ref_dx = sess.run(tf.gradients(tf.reduce_sum(y * tf.constant(mask)), [x])[0], {x: xv})
    np.testing.assert_allclose(dxv, ref_dx, rtol=1e-4, atol=1e-4)
