"""Conv3D and its two backprops on oneDNN (dtf.kernels.cpu.conv3d) against the numpy
reference: odd sizes, strides 1 and 2 (and mixed), SAME and VALID, filters of 1 to 3 taps
per axis, batch 1, one input channel, dilation through the op's zero-filled filter, and
what stays with the reference (float64, dilations in an imported graph's attributes).
Values against TF: tests/goldens/cases_nn_conv.py."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import conv3d, onednn, onednn_conv3d
from dtf.kernels.reference import REFERENCE

needs_onednn = pytest.mark.skipif(onednn.library() is None, reason="oneDNN is not installed")
RNG = np.random.default_rng(15)
OPS = ("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2")


@pytest.fixture(autouse=True)
def enabled(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", True)


def _attrs(strides, padding, t=tf.float32, dilations=(1, 1, 1, 1, 1)):
    return {"T": t, "strides": [1, *strides, 1], "padding": padding, "data_format": "NDHWC",
            "dilations": list(dilations)}


def _kernel(op, attrs):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [attrs["T"]])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def _three(x, w, attrs):
    y = REFERENCE[OPS[0]](attrs, x, w)
    dy = RNG.standard_normal(y.shape).astype(x.dtype)
    xs, ws = np.array(x.shape, np.int32), np.array(w.shape, np.int32)
    got = [_kernel(OPS[0], attrs)(None, x, w), _kernel(OPS[1], attrs)(None, xs, w, dy),
           _kernel(OPS[2], attrs)(None, x, ws, dy)]
    want = [y, REFERENCE[OPS[1]](attrs, xs, w, dy), REFERENCE[OPS[2]](attrs, x, ws, dy)]
    return got, want


@needs_onednn
@pytest.mark.parametrize("x_shape,k,co,strides,padding", [
    ((8, 16, 16, 16, 16), (3, 3, 3), 16, (1, 1, 1), "SAME"),
    ((2, 5, 7, 6, 3), (3, 3, 3), 4, (1, 1, 1), "SAME"),
    ((1, 9, 8, 7, 1), (2, 3, 1), 5, (2, 2, 1), "VALID"),
    ((2, 6, 5, 9, 4), (3, 1, 3), 2, (2, 1, 2), "SAME"),
    ((3, 4, 4, 4, 8), (1, 1, 1), 8, (1, 1, 1), "VALID"),
])
def test_the_library_matches_the_reference(x_shape, k, co, strides, padding):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal((*k, x_shape[-1], co)).astype(np.float32)
    got, want = _three(x, w, _attrs(strides, padding))
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(b).max())))


@needs_onednn
def test_the_common_shape_runs_on_the_librarys_jit_kernels():
    geo = onednn_conv3d.geometry((8, 16, 16, 16, 16), (3, 3, 3, 16, 16), (16, 16, 16), (1, 1, 1),
                                 (1, 1, 1))
    for kind in ("forward", "input", "filter"):
        prim = onednn_conv3d._primitive(kind, geo)
        assert prim is not None and not prim.impl.startswith("ref"), kind


def test_float64_and_imported_dilations_stay_with_the_reference(monkeypatch):
    x = RNG.standard_normal((2, 5, 5, 5, 2))
    w = RNG.standard_normal((3, 3, 3, 2, 3))
    got, want = _three(x, w, _attrs((1, 1, 1), "SAME", tf.float64))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    calls = []
    monkeypatch.setattr(onednn_conv3d, "conv3d", lambda *a: calls.append(a))
    dilated = _attrs((1, 1, 1), "SAME", dilations=(1, 2, 2, 2, 1))
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    np.testing.assert_array_equal(_kernel(OPS[0], dilated)(None, x32, w32),
                                  REFERENCE[OPS[0]](dilated, x32, w32))
    assert not calls and not conv3d._plain(dilated)


@needs_onednn
def test_a_dilated_conv3d_trains_through_the_library():
    xv = RNG.standard_normal((2, 7, 6, 8, 3)).astype(np.float32)
    wv = RNG.standard_normal((2, 2, 2, 3, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    w = tf.constant(wv)
    y = tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "SAME", dilations=[1, 2, 2, 2, 1])
    gx, gw = tf.gradients(tf.reduce_sum(y * y), [x, w])
    with tf.Session() as sess:
        got = sess.run([y, gx, gw], {x: xv})
    wd = np.zeros((3, 3, 3, 3, 4), np.float32)
    wd[::2, ::2, ::2] = wv
    attrs = _attrs((1, 1, 1), "SAME")
    want_y = REFERENCE[OPS[0]](attrs, xv, wd)
    dy = 2 * want_y
    want = [want_y, REFERENCE[OPS[1]](attrs, np.array(xv.shape), wd, dy),
            REFERENCE[OPS[2]](attrs, xv, np.array(wd.shape), dy)[::2, ::2, ::2]]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(b).max())))
