"""ReluGrad folded into the max pooling gradient (dtf.runtime.fusion_pool): one step for the
pair, the unfused values bit for bit (ties, zeros, negatives, NaN), the pair kept apart
where the pooling's gradient is fetched or its windows do not tile the image."""
import numpy as np
import pytest

import dtf as tf
from dtf.kernels.cpu import jit_loading
from tests.unit.test_fusion import _run_both

RNG = np.random.default_rng(5)


@pytest.fixture(autouse=True, scope="module")
def loops_loaded():
    jit_loading.wait(120)  # the fused loop serves only once Numba's loops are loaded


def _model(ksize, strides, padding, dtype=tf.float32):
    x = tf.placeholder(dtype, [3, 8, 10, 5])
    r = tf.nn.relu(x)
    p = tf.nn.max_pool(r, [1, *ksize, 1], [1, *strides, 1], padding)
    w = tf.placeholder(dtype, None)
    dx = tf.gradients(tf.reduce_sum(p * w), x)[0]
    return x, w, p, dx


def _labels(fetches, feed):
    with tf.Session() as sess:
        meta = tf.RunMetadata()
        out = sess.run(fetches, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=meta)
    return out, [s.timeline_label for d in meta.step_stats.dev_stats for s in d.node_stats]


def _inputs(dtype=np.float32, shape=(3, 8, 10, 5), pooled=(3, 4, 5, 5)):
    xv = RNG.standard_normal(shape).astype(dtype)
    xv[0, :2, :2] = 0.5  # ties inside a window: the first tap takes the gradient
    xv[1, 2:4, 2:4] = -1.0  # a window of negatives: its maximum is <= 0, the mask is 0
    xv[2, 0, 0, 0] = 0.0
    wv = RNG.standard_normal(pooled).astype(dtype)
    wv[0, 0, 0, 1] = -2.0  # a negative gradient at a masked tap: -0.0 as ReluGrad gives
    return xv, wv


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pool_and_relu_gradients_fuse_and_match_unfused(dtype):
    x, w, p, dx = _model((2, 2), (2, 2), "VALID", tf.as_dtype(dtype))
    xv, wv = _inputs(dtype)
    got, labels = _labels(dx, {x: xv, w: wv})
    # One step for both, under the ReluGrad's name: the pooling gradient runs no kernel of
    # its own.
    assert any("= ReluGrad(" in label for label in labels)
    assert not any("= MaxPoolGrad(" in label for label in labels), labels
    fused, unfused = _run_both(dx, {x: xv, w: wv})
    np.testing.assert_array_equal(fused, unfused)
    np.testing.assert_array_equal(np.signbit(fused), np.signbit(unfused))
    np.testing.assert_array_equal(got, unfused)


def test_nan_and_inf_gradients_match_unfused():
    x, w, p, dx = _model((2, 2), (2, 2), "SAME")
    xv, wv = _inputs()
    xv[0, 4, 4, 2] = np.nan
    wv[1, 1, 1, 3], wv[2, 3, 4, 0] = np.inf, np.nan
    with np.errstate(invalid="ignore"):
        fused, unfused = _run_both(dx, {x: xv, w: wv})
    np.testing.assert_array_equal(fused, unfused)  # NaN where unfused has NaN


def test_a_fetched_pool_gradient_or_overlapping_windows_stay_unfused():
    x, w, p, dx = _model((2, 2), (2, 2), "VALID")
    xv, wv = _inputs()
    pool_grad = dx.op.inputs[0]
    assert pool_grad.op.type == "MaxPoolGrad"
    (dxv, pgv), labels = _labels([dx, pool_grad], {x: xv, w: wv})
    assert any("= MaxPoolGrad(" in label for label in labels)
    np.testing.assert_array_equal(dxv, pgv * (xv > 0))
    # 3x3 windows at stride 2 overlap: the pair is one step, which runs both kernels.
    x, w, p, dx = _model((3, 3), (2, 2), "SAME")
    wv = RNG.standard_normal((3, 4, 5, 5)).astype(np.float32)
    fused, unfused = _run_both(dx, {x: xv, w: wv})
    np.testing.assert_array_equal(fused, unfused)
