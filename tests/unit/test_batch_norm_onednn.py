"""Fused batch norm in training on oneDNN (dtf.kernels.cpu.onednn_norm) against the numpy
reference: forward with and without its ReLU, the gradient with and without the ReLU mask
(the library's workspace, carried in reserve_space_3), odd sizes and batch 1, what stays
with our loops (a residual add, float64, 5-D, strided inputs, a ReLU output that is not
the workspace's), and a graph whose step runs on the library end to end."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels.cpu import norm, onednn, onednn_norm
from dtf.kernels.reference import REFERENCE

needs_onednn = pytest.mark.skipif(onednn.library() is None, reason="oneDNN is not installed")

RNG = np.random.default_rng(11)
EPS = 1e-3
SHAPES = [(64, 32, 32, 16), (2, 3, 4, 5), (9, 33, 40, 13), (1, 7, 5, 3), (1, 1, 1, 1)]


@pytest.fixture(autouse=True)
def enabled(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", True)


def _node(op, n_out):
    attrs = {"T": tf.float32, "U": tf.float32, "epsilon": EPS, "is_training": True,
             "data_format": "NHWC", "exponential_avg_factor": 1.0}
    return NodeDef(f"test_{op}", op, [], [], "", attrs, [tf.float32] * n_out)


FORWARD, GRADIENT = _node("FusedBatchNormV3", 6), _node("FusedBatchNormGradV3", 5)


def _inputs(shape):
    c = shape[-1]
    x = (RNG.standard_normal(shape) * 3 + 5).astype(np.float32)
    scale = (RNG.random(c) + 0.5).astype(np.float32)
    offset = RNG.standard_normal(c).astype(np.float32)
    return x, scale, offset


def _reference_forward(x, scale, offset, relu):
    empty = np.zeros(0, np.float32)
    out = list(REFERENCE["FusedBatchNormV3"](FORWARD.attrs, x, scale, offset, empty, empty))
    if relu:
        out[0] = np.maximum(out[0], 0)
    return out


def _close(got, want, scale=1.0):
    np.testing.assert_allclose(got, want, rtol=2e-5 * scale,
                               atol=2e-5 * scale * max(1.0, float(np.abs(want).max())))


@needs_onednn
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("relu", [False, True])
def test_forward_matches_the_reference(shape, relu):
    x, scale, offset = _inputs(shape)
    got = onednn_norm.forward(x, scale, offset, EPS, relu)
    assert got is not None, onednn_norm.implementation(shape, EPS, relu)
    y, mean, var, workspace = got
    want = _reference_forward(x, scale, offset, relu)
    _close(y, want[0])
    _close(mean, want[3])
    _close(var, want[4])  # biased, as reserve_space_2
    # Through the kernel: TF's five statistics outputs, reserve_space_3 last.
    outs = norm.forward(FORWARD, relu=relu)(x, scale, offset, None, None)
    for g, w in zip(outs[:5], want[:5]):
        assert g.dtype == w.dtype and g.shape == w.shape
        _close(g, w)
    if relu and isinstance(outs[5], onednn_norm.Workspace):
        assert outs[5].serves(outs[0])
    elif not relu:
        assert outs[5].shape == (0,)


@needs_onednn
@pytest.mark.parametrize("shape", SHAPES)
def test_gradient_matches_the_reference(shape):
    x, scale, offset = _inputs(shape)
    dy = RNG.standard_normal(shape).astype(np.float32)
    stats = _reference_forward(x, scale, offset, False)[3:6]
    got = onednn_norm.backward(dy, x, scale, stats[0], stats[1], EPS)
    assert got is not None
    want = REFERENCE["FusedBatchNormGradV3"](GRADIENT.attrs, dy, x, scale, *stats)
    for g, w in zip(got, want[:3]):
        _close(g, w, scale=10)


@needs_onednn
@pytest.mark.parametrize("shape", [(64, 32, 32, 16), (3, 5, 7, 3)])
def test_relu_masked_gradient_uses_the_forwards_workspace(shape):
    x, scale, offset = _inputs(shape)
    x -= 5  # about half the outputs negative: the mask matters
    dy = RNG.standard_normal(shape).astype(np.float32)
    y, mean, var, workspace = onednn_norm.forward(x, scale, offset, EPS, True)
    if not isinstance(workspace, onednn_norm.Workspace):
        pytest.skip("the library keeps no workspace for this shape")
    masked = np.where(y > 0, dy, 0).astype(np.float32)
    want = REFERENCE["FusedBatchNormGradV3"](GRADIENT.attrs, masked, x, scale, mean, var,
                                             np.zeros(0, np.float32))
    # The ReLU output reaches the gradient as a view of y (fusion_norm passes it on so).
    got = onednn_norm.backward(dy, x, scale, mean, var, EPS, y.view(np.ndarray), workspace)
    assert got is not None
    for g, w in zip(got, want[:3]):
        _close(g, w, scale=10)
    through_kernel = norm.backward(GRADIENT)(dy, y, x, scale, mean, var, workspace)
    for g, w in zip(through_kernel[:3], want[:3]):
        _close(g, w, scale=10)


@needs_onednn
def test_a_relu_output_that_is_not_the_workspaces_is_masked_by_our_loops():
    x, scale, offset = _inputs((4, 6, 6, 8))
    x -= 5
    dy = RNG.standard_normal(x.shape).astype(np.float32)
    y, mean, var, workspace = onednn_norm.forward(x, scale, offset, EPS, True)
    if not isinstance(workspace, onednn_norm.Workspace):
        pytest.skip("the library keeps no workspace for this shape")
    other = np.maximum(RNG.standard_normal(x.shape), 0).astype(np.float32)  # another mask
    assert not workspace.serves(other) and not workspace.serves(y.copy())
    assert onednn_norm.backward(dy, x, scale, mean, var, EPS, other, workspace) is None
    assert onednn_norm.backward(dy, x, scale, mean, var, EPS, other, None) is None
    masked = np.where(other > 0, dy, 0).astype(np.float32)
    want = REFERENCE["FusedBatchNormGradV3"](GRADIENT.attrs, masked, x, scale, mean, var,
                                             np.zeros(0, np.float32))
    got = norm.backward(GRADIENT)(dy, other, x, scale, mean, var, workspace)
    for g, w in zip(got[:3], want[:3]):
        _close(g, w, scale=10)


@needs_onednn
def test_inputs_the_library_does_not_take_stay_with_our_loops():
    x, scale, offset = _inputs((4, 6, 6, 8))
    assert onednn_norm.forward(x.astype(np.float64), scale, offset, EPS, False) is None
    assert onednn_norm.forward(x.reshape(4, 6, 3, 2, 8), scale, offset, EPS, False) is None
    strided = np.zeros((4, 6, 12, 8), np.float32)[:, :, ::2]
    assert onednn_norm.forward(strided, scale, offset, EPS, False) is None
    assert onednn_norm.forward(x[:0], scale, offset, EPS, False) is None
    h = RNG.standard_normal(x.shape).astype(np.float32)
    want = _reference_forward(x, scale, offset, False)
    want[0] = np.maximum(want[0] + h, 0)
    outs = norm.forward(FORWARD, relu=True)(x, scale, offset, None, None, h)  # residual
    for g, w in zip(outs[:5], want[:5]):
        _close(g, w)
    assert outs[5].shape == (0,)


def test_without_the_library_the_loops_give_the_same_values(monkeypatch):
    x, scale, offset = _inputs((8, 5, 5, 16))
    dy = RNG.standard_normal(x.shape).astype(np.float32)
    results = []
    for on in (True, False):
        monkeypatch.setattr(onednn, "ENABLED", on)
        outs = norm.forward(FORWARD, relu=True)(x, scale, offset, None, None)
        grads = norm.backward(GRADIENT)(dy, outs[0], x, scale, outs[3], outs[4], outs[5])
        results.append(list(outs[:5]) + list(grads[:3]))
    for a, b in zip(*results):
        _close(a, b, scale=10)


@needs_onednn
def test_a_relu_batch_norm_block_trains_on_the_library(monkeypatch):
    calls = {"forward": 0, "backward": 0}
    for name in calls:
        original = getattr(onednn_norm, name)

        def counted(*args, _original=original, _name=name, **kw):
            out = _original(*args, **kw)
            calls[_name] += out is not None
            return out

        monkeypatch.setattr(onednn_norm, name, counted)
    from dtf.kernels.cpu import jit_loading

    assert jit_loading.wait(120), "Numba's loops did not load"  # the fused ReLU needs them
    xv, scale, offset = _inputs((8, 6, 6, 16))
    xv -= 5
    x = tf.placeholder(tf.float32, xv.shape)
    s, o = tf.constant(scale), tf.constant(offset)
    y = tf.nn.relu(tf.nn.fused_batch_norm(x, s, o, epsilon=EPS, is_training=True)[0])
    loss = tf.reduce_sum(y * y)
    dx, ds, do = tf.gradients(loss, [x, s, o])
    with tf.Session() as sess:
        got = sess.run([y, dx, ds, do], {x: xv})
    want_y = _reference_forward(xv, scale, offset, True)
    _close(got[0], want_y[0])
    dy = (2 * want_y[0]).astype(np.float32)  # d(sum y^2)/dy, zero where the ReLU cut
    want = REFERENCE["FusedBatchNormGradV3"](GRADIENT.attrs, dy, xv, scale, *want_y[3:6])
    for g, w in zip(got[1:], want[:3]):
        _close(g, w, scale=10)
    assert calls["forward"] >= 1 and calls["backward"] >= 1


@needs_onednn
@pytest.mark.parametrize("shape", [(64, 32, 32, 16), (2, 3, 4, 5), (1, 7, 5, 3)])
def test_the_inference_gradient_matches_the_reference(shape):
    x, scale, _ = _inputs(shape)
    dy = RNG.standard_normal(shape).astype(np.float32)
    c = shape[-1]
    mean = RNG.standard_normal(c).astype(np.float32)
    var = (RNG.random(c) + 0.5).astype(np.float32)
    got = onednn_norm.backward(dy, x, scale, mean, var, EPS, training=False)
    assert got is not None
    attrs = dict(GRADIENT.attrs, is_training=False)
    want = REFERENCE["FusedBatchNormGradV3"](attrs, dy, x, scale, mean, var, np.zeros(0, np.float32))
    for g, w in zip(got, want[:3]):
        _close(g, w, scale=10)
    node = _node("FusedBatchNormGradV3", 5)
    node.attrs["is_training"] = False
    through_kernel = norm.backward(node)(dy, None, x, scale, mean, var)
    for g, w in zip(through_kernel[:3], want[:3]):
        _close(g, w, scale=10)
    # A ReLU mask in inference has no workspace: our loops.
    assert onednn_norm.backward(dy, x, scale, mean, var, EPS, np.abs(x), None, training=False) is None
