"""DepthwiseConv2dNative and its two backprops on oneDNN's grouped convolutions
(dtf.kernels.cpu.depthwise) against the numpy reference: odd sizes, strides 1 and 2, SAME
and VALID, channel multipliers 1 to 3, batch 1, one channel, dilation (through the op's
zero-filled filter), and what stays with the reference (float64, dilations in the
attributes of an imported graph, an empty batch). Values against TF:
tests/goldens/cases_nn_conv.py."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import depthwise, onednn
from dtf.kernels.reference import REFERENCE

needs_onednn = pytest.mark.skipif(onednn.library() is None, reason="oneDNN is not installed")

RNG = np.random.default_rng(5)
OPS = ("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
       "DepthwiseConv2dNativeBackpropFilter")


@pytest.fixture(autouse=True)
def enabled(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", True)


def _attrs(strides, padding, dtype=tf.float32, dilations=(1, 1, 1, 1)):
    return {"T": dtype, "strides": [1, strides[0], strides[1], 1], "padding": padding,
            "data_format": "NHWC", "dilations": list(dilations)}


def _kernel(op, attrs):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [attrs["T"]])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def _case(x_shape, k, m, strides, padding, dtype=np.float32):
    x = RNG.standard_normal(x_shape).astype(dtype)
    w = RNG.standard_normal((k[0], k[1], x_shape[3], m)).astype(dtype)
    attrs = _attrs(strides, padding, tf.float32 if dtype == np.float32 else tf.float64)
    y = REFERENCE["DepthwiseConv2dNative"](attrs, x, w)
    dy = RNG.standard_normal(y.shape).astype(dtype)
    return x, w, dy, attrs


def _all_three(x, w, dy, attrs):
    xs, ws = np.array(x.shape, np.int32), np.array(w.shape, np.int32)
    return [
        _kernel(OPS[0], attrs)(None, x, w),
        _kernel(OPS[1], attrs)(None, xs, w, dy),
        _kernel(OPS[2], attrs)(None, x, ws, dy),
    ], [
        REFERENCE[OPS[0]](attrs, x, w),
        REFERENCE[OPS[1]](attrs, xs, w, dy),
        REFERENCE[OPS[2]](attrs, x, ws, dy),
    ]


CASES = [
    ((64, 32, 32, 32), (3, 3), 1, (1, 1), "SAME"),
    ((2, 9, 11, 5), (3, 3), 2, (1, 1), "SAME"),
    ((3, 10, 7, 4), (3, 3), 1, (2, 2), "SAME"),
    ((2, 13, 12, 3), (5, 5), 3, (2, 1), "VALID"),
    ((1, 8, 8, 1), (3, 3), 1, (1, 1), "VALID"),
    ((1, 6, 9, 17), (2, 4), 2, (2, 2), "SAME"),
    ((4, 7, 7, 16), (1, 1), 1, (1, 1), "VALID"),
]


@needs_onednn
@pytest.mark.parametrize("x_shape,k,m,strides,padding", CASES)
def test_the_library_matches_the_reference(x_shape, k, m, strides, padding):
    x, w, dy, attrs = _case(x_shape, k, m, strides, padding)
    g = depthwise.DepthwisePlan(attrs, x.shape, w.shape)
    names = [onednn.implementation(kind, g) for kind in ("forward", "input", "filter")]
    got, want = _all_three(x, w, dy, attrs)
    for name, a, b in zip(names, got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        scale = max(1.0, float(np.abs(b).max()))
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * scale, err_msg=str(name))


@needs_onednn
def test_the_common_shapes_run_on_the_librarys_jit_kernels():
    attrs = _attrs((1, 1), "SAME")
    g = depthwise.DepthwisePlan(attrs, (64, 32, 32, 32), (3, 3, 32, 1))
    for kind in ("forward", "input", "filter"):
        name = onednn.implementation(kind, g)
        assert name is not None and not name.startswith("ref"), (kind, name)


def test_float64_and_imported_dilations_stay_with_the_reference(monkeypatch):
    x, w, dy, attrs = _case((2, 7, 7, 3), (3, 3), 2, (1, 1), "SAME", dtype=np.float64)
    got, want = _all_three(x, w, dy, attrs)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    calls = []
    monkeypatch.setattr(onednn, "conv2d", lambda *a: calls.append(a))
    x32 = x.astype(np.float32)
    dilated = _attrs((1, 1), "SAME", dilations=(1, 2, 2, 1))
    out = _kernel(OPS[0], dilated)(None, x32, w.astype(np.float32))
    np.testing.assert_array_equal(out, REFERENCE[OPS[0]](dilated, x32, w.astype(np.float32)))
    assert not calls
    empty = _kernel(OPS[0], _attrs((1, 1), "SAME"))(None, x32[:0], w.astype(np.float32))
    assert empty.shape == (0, 7, 7, 6)


@needs_onednn
def test_a_dilated_depthwise_layer_trains_through_the_library():
    xv = RNG.standard_normal((2, 12, 11, 4)).astype(np.float32)
    wv = RNG.standard_normal((3, 3, 4, 2)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.constant(wv)
    y = tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME", rate=[2, 2])
    loss = tf.reduce_sum(y * y)
    gx, gw = tf.gradients(loss, [x, w])
    with tf.Session() as sess:
        got = sess.run([y, gx, gw], {x: xv})
    # The same through the reference: the filter dilated by hand (zeros between taps).
    wd = np.zeros((5, 5, 4, 2), np.float32)
    wd[::2, ::2] = wv
    attrs = _attrs((1, 1), "SAME")
    want_y = REFERENCE[OPS[0]](attrs, xv, wd)
    dy = 2 * want_y
    want_gx = REFERENCE[OPS[1]](attrs, np.array(xv.shape), wd, dy)
    want_gw = REFERENCE[OPS[2]](attrs, xv, np.array(wd.shape), dy)[::2, ::2]
    for a, b in zip(got, (want_y, want_gx, want_gw)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(b).max())))
