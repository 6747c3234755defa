"""LRN and LRNGrad's float32 kernels (dtf.kernels.cpu.lrn) against the numpy reference:
oneDNN's LRN where its JIT kernels take the parameters (beta 0.75 and 1), the band-product
path for the others (TF's default beta 0.5, any beta, a radius wider than the channels,
and radius 0, which crashed the library's kernel as it was built), odd channel counts,
batch 1, strided inputs, and float64 on the reference. Values against TF:
tests/goldens/cases_nn_extra.py."""
import numpy as np
import pytest

from tests.cpu_features import cpu_has_avx512

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import lrn, onednn, onednn_lrn
from dtf.kernels.reference import REFERENCE

RNG = np.random.default_rng(9)


@pytest.fixture(autouse=True)
def enabled(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", True)


def _kernels(r, bias, alpha, beta, dtype=tf.float32):
    attrs = {"T": dtype, "depth_radius": r, "bias": bias, "alpha": alpha, "beta": beta}
    out = []
    for op in ("LRN", "LRNGrad"):
        node = NodeDef(f"test_{op}", op, [], [], "", dict(attrs), [dtype])
        out.append(registry.lookup(op, "CPU", node.dtype_key).factory(node))
    return attrs, out


PARAMS = [(5, 1.0, 1.0, 0.5), (4, 1.0, 0.001 / 9.0, 0.75), (2, 2.0, 1e-4, 0.75), (2, 1.0, 0.5, 1.0),
          (3, 0.5, 0.3, 0.6), (0, 1.0, 1.0, 0.5), (0, 1.0, 0.5, 0.75), (40, 1.0, 0.01, 0.75)]
SHAPES = [(4, 6, 5, 16), (1, 3, 3, 3), (2, 7, 4, 17)]


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("shape", SHAPES)
def test_lrn_and_its_gradient_match_the_reference(params, shape):
    attrs, (fwd, grad) = _kernels(*params)
    x = (RNG.standard_normal(shape) * 2).astype(np.float32)
    g = RNG.standard_normal(shape).astype(np.float32)
    y = fwd(None, x)
    want_y = REFERENCE["LRN"](attrs, x)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    dx = grad(None, g, x, y)
    want_dx = REFERENCE["LRNGrad"](attrs, g, x, want_y)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(want_dx).max())))


def test_the_band_path_alone_matches_the_reference():
    attrs, _ = _kernels(4, 1.0, 0.001 / 9.0, 0.75)
    x = RNG.standard_normal((3, 5, 5, 12)).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    args = (4, 1.0, 0.001 / 9.0, 0.75)
    np.testing.assert_allclose(lrn.lrn_rows(x, *args), REFERENCE["LRN"](attrs, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lrn.lrn_grad_rows(g, x, *args),
                               REFERENCE["LRNGrad"](attrs, g, x, None), rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(onednn.library() is None, reason="oneDNN is not installed")
@pytest.mark.skipif(not cpu_has_avx512(), reason="the library's LRN has JIT kernels only on AVX-512 CPUs")
def test_the_tutorial_parameters_run_on_the_librarys_jit_kernels():
    prim = onednn_lrn._primitive((128, 12, 12, 64), 4, 1.0, 0.001 / 9.0, 0.75)
    assert prim is not None and not any(i.startswith("ref") for i in prim.impl)
    assert onednn_lrn._primitive((4, 6, 5, 16), 5, 1.0, 1.0, 0.5) is None  # only ref: band path


def test_strided_float32_and_float64_inputs():
    attrs, (fwd, grad) = _kernels(2, 1.0, 0.1, 0.75)
    x = RNG.standard_normal((2, 4, 6, 8)).astype(np.float32)
    view = x.transpose(0, 2, 1, 3)  # not contiguous
    np.testing.assert_allclose(fwd(None, view), REFERENCE["LRN"](attrs, view), rtol=1e-5, atol=1e-6)
    attrs64, (fwd64, grad64) = _kernels(2, 1.0, 0.1, 0.75, tf.float64)
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(fwd64(None, x64), REFERENCE["LRN"](attrs64, x64))


def test_a_bad_rank_names_the_shape():
    _, (fwd, _) = _kernels(2, 1.0, 0.1, 0.75)
    with pytest.raises(Exception, match="4-dimensional"):
        fwd(None, np.zeros((2, 3, 4), np.float32))


def test_an_lrn_layer_trains_through_the_kernels():
    xv = RNG.standard_normal((2, 5, 5, 8)).astype(np.float32)
    x = tf.placeholder(tf.float32, xv.shape)
    y = tf.nn.lrn(x, 2, bias=1.0, alpha=0.001 / 9.0, beta=0.75)
    gx, = tf.gradients(tf.reduce_sum(y * y), [x])
    with tf.Session() as sess:
        got_y, got_gx = sess.run([y, gx], {x: xv})
    attrs = {"depth_radius": 2, "bias": 1.0, "alpha": 0.001 / 9.0, "beta": 0.75}
    want_y = REFERENCE["LRN"](attrs, xv)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_gx, REFERENCE["LRNGrad"](attrs, 2 * want_y, xv, want_y),
                               rtol=1e-4, atol=1e-5)
