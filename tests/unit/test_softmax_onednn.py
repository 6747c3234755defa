"""Softmax and LogSoftmax on oneDNN (dtf.kernels.cpu.onednn_softmax) and their gradients in
one step (dtf.runtime.fusion_softmax), against a float64 numpy reference: odd row counts
and widths, one column, N-D inputs, strided inputs, batch 1, NaN and infinities (which the
library's kernels treat otherwise and so go to numpy), float64 and small inputs (numpy),
and the gradient's four ops kept apart where an intermediate is fetched. Values and
gradients against TF: tests/goldens (softmax cases)."""
import numpy as np
import pytest

from tests.cpu_features import cpu_has_avx512

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import onednn, onednn_softmax
from dtf.runtime import fusion_softmax
from tests.unit.test_fusion import _ops, _plan

needs_onednn = pytest.mark.skipif(onednn.library() is None, reason="oneDNN is not installed")
RNG = np.random.default_rng(11)
SHAPES = [(32, 32, 32, 64), (4099, 17), (1, 40_000), (50_001, 1), (3, 7, 1601)]


@pytest.fixture(autouse=True)
def enabled(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", True)


def _kernel(op, dtype=tf.float32):
    node = NodeDef(f"test_{op}", op, [], [], "", {"T": dtype}, [dtype])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def _softmax64(x, log):
    x = x.astype(np.float64)
    shifted = x - x.max(axis=-1, keepdims=True)
    if log:
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def _grad64(y, dy, log):
    y, dy = y.astype(np.float64), dy.astype(np.float64)
    if log:
        return dy - dy.sum(axis=-1, keepdims=True) * np.exp(y)
    return (dy - (dy * y).sum(axis=-1, keepdims=True)) * y


@needs_onednn
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_a_float64_reference(shape):
    x = (RNG.standard_normal(shape) * 4).astype(np.float32)
    # The library serves softmax with its JIT kernels on AVX-512 CPUs; elsewhere it has only
    # its reference loops, which dtf declines, and the kernel below runs on numpy.
    assert onednn_softmax.softmax(x) is not None or not cpu_has_avx512()
    got = _kernel("Softmax")(None, x)
    assert got.shape == shape and got.dtype == np.float32
    want = _softmax64(x, False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)  # sums over 40,000 in float32


@needs_onednn
def test_strided_input_and_special_values_give_the_references_values():
    x = RNG.standard_normal((600, 130)).astype(np.float32)
    view = x[:, ::2]  # not contiguous: copied, then served
    np.testing.assert_allclose(_kernel("Softmax")(None, view), _softmax64(view, False), rtol=4e-6)
    x[3, 5], x[10, 0], x[11, :], x[12, :3] = np.nan, np.inf, -np.inf, -np.inf
    assert onednn_softmax.softmax(x) is None  # the library's NaN rows differ: numpy
    from dtf.kernels.reference import REFERENCE

    with np.errstate(invalid="ignore"):
        want = REFERENCE["Softmax"]({"T": tf.float32}, x)
        got = _kernel("Softmax")(None, x)
    np.testing.assert_array_equal(got, want)


def test_small_float64_and_log_softmax_inputs_stay_with_numpy():
    from dtf.kernels.reference import REFERENCE

    assert onednn_softmax.softmax(np.zeros((64, 10), np.float32)) is None
    assert onednn_softmax.softmax(np.zeros((512, 128))) is None
    x = RNG.standard_normal((700, 100)).astype(np.float32)  # LogSoftmax: numpy's blocks
    np.testing.assert_array_equal(_kernel("LogSoftmax")(None, x),
                                  REFERENCE["LogSoftmax"]({"T": tf.float32}, x))
    assert onednn_softmax.gradient(np.zeros((512, 128)), np.zeros((512, 128)), True) is None


def _gradient_graph(shape, log, dtype=tf.float32, axis=-1):
    x = tf.placeholder(dtype, shape)
    dy = tf.placeholder(dtype, shape)
    y = (tf.nn.log_softmax if log else tf.nn.softmax)(x, axis=axis)
    return x, dy, y, tf.gradients(y, x, grad_ys=dy)[0]


@needs_onednn
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(32, 32, 32, 64), (4099, 17), (1, 40_000), (50_001, 1)])
def test_gradient_runs_as_one_step_and_matches_a_float64_reference(shape, log):
    x, dy, y, dx = _gradient_graph(shape, log)
    plan = _plan([dx], [x, dy])
    kind = "LogSoftmax" if log else "Softmax"
    fused = [op for op in _ops(plan) if op.startswith(f"Fused({kind} gradient")]
    assert len(fused) == 1, _ops(plan)
    assert plan.steps[-1][4].name == dx.op.name
    xv = (RNG.standard_normal(shape) * 3).astype(np.float32)
    dyv = RNG.standard_normal(shape).astype(np.float32)
    with tf.Session() as sess:
        yv, got = sess.run([y, dx], {x: xv, dy: dyv})
    assert got.dtype == np.float32 and got.shape == shape
    want = _grad64(yv, dyv, log)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6 * np.abs(dyv).max())


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("case", ["float64", "small", "other axis", "nan"])
def test_gradient_falls_back_to_the_four_ops_with_the_same_values(log, case):
    shape, dtype = (300, 130), tf.float32
    if case == "float64":
        dtype = tf.float64
    elif case == "small":
        shape = (64, 10)
    x, dy, y, dx = _gradient_graph(shape, log, dtype, axis=0 if case == "other axis" else -1)
    xv = (RNG.standard_normal(shape) * 3).astype(dtype.as_numpy_dtype)
    dyv = RNG.standard_normal(shape).astype(dtype.as_numpy_dtype)
    if case == "nan":
        xv[3, 5] = np.nan
        dyv[7, 2] = np.inf
    with tf.Session() as sess:
        with np.errstate(invalid="ignore"):
            yv, got = sess.run([y, dx], {x: xv, dy: dyv})
    with np.errstate(invalid="ignore"):
        if case == "other axis":
            want = _grad64(yv.T, dyv.T, log).T
        else:
            want = _grad64(yv, dyv, log)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(dyv[np.isfinite(dyv)]).max())
    assert np.array_equal(np.isnan(got), np.isnan(want))


def test_a_fetched_intermediate_keeps_the_ops_apart():
    x, dy, y, dx = _gradient_graph((400, 100), False)
    total = dx.op.inputs[0].op.inputs[1]  # the Sum of the Sub (g - sum)
    assert total.op.type == "Sum"
    plan = _plan([dx, total], [x, dy])
    assert not [op for op in _ops(plan) if op.startswith("Fused(Softmax gradient")]
    xv = RNG.standard_normal((400, 100)).astype(np.float32)
    dyv = RNG.standard_normal((400, 100)).astype(np.float32)
    with tf.Session() as sess:
        yv, got, s = sess.run([y, dx, total], {x: xv, dy: dyv})
    np.testing.assert_allclose(got, _grad64(yv, dyv, False), rtol=1e-5, atol=1e-6)


def test_the_chain_needs_a_softmax_output():
    x = tf.placeholder(tf.float32, [400, 100])
    g = tf.placeholder(tf.float32, [400, 100])
    y = tf.sigmoid(x)  # the same formula on a tensor that is no softmax: left alone
    out = (g - tf.reduce_sum(g * y, -1, keepdims=True)) * y
    assert not [op for op in _ops(_plan([out], [x, g])) if op.startswith("Fused(Softmax")]
    assert fusion_softmax.fuse_softmax_grads([], set()) == []


def test_ops_that_read_variables_build_and_run():
    """A Mul reading a variable has a one-input read step carrying the Mul's node first."""
    g = tf.placeholder(tf.float32, [400, 100])
    v = tf.Variable(np.full([400, 100], 0.01, np.float32))
    out = (g - tf.reduce_sum(g * v, -1, keepdims=True)) * v
    gv = RNG.standard_normal((400, 100)).astype(np.float32)
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = sess.run(out, {g: gv})
    np.testing.assert_allclose(got, _grad64(np.full([400, 100], 0.01), gv, False), rtol=1e-5, atol=1e-7)


@needs_onednn
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(300, 130), (64, 10)])  # the library's, and numpy's
def test_an_output_gradient_read_from_a_variable_still_fuses(log, shape):
    # The Mul and the Sub each read the variable in a read step of their own, the Sum in
    # its kernel: slots holding one value, which the chain accepts as its g.
    x = tf.placeholder(tf.float32, shape)
    dyv = RNG.standard_normal(shape).astype(np.float32)
    dy = tf.Variable(dyv)
    y = (tf.nn.log_softmax if log else tf.nn.softmax)(x)
    dx = tf.gradients(y, x, grad_ys=dy)[0]
    kind = "LogSoftmax" if log else "Softmax"
    assert [op for op in _ops(_plan([dx], [x])) if op.startswith(f"Fused({kind} gradient")]
    xv = (RNG.standard_normal(shape) * 3).astype(np.float32)
    with tf.Session() as sess:
        sess.run(dy.initializer)
        yv, got = sess.run([y, dx], {x: xv})
    np.testing.assert_allclose(got, _grad64(yv, dyv, log), rtol=1e-5, atol=2e-6 * np.abs(dyv).max())


def test_reads_of_two_variables_are_not_one_gradient():
    x = tf.placeholder(tf.float32, [400, 100])
    y = tf.nn.softmax(x)
    a = tf.Variable(np.full([400, 100], 0.5, np.float32))
    b = tf.Variable(np.full([400, 100], 2.0, np.float32))
    out = (b - tf.reduce_sum(a * y, -1, keepdims=True)) * y
    assert not [op for op in _ops(_plan([out], [x])) if op.startswith("Fused(Softmax")]
    xv = RNG.standard_normal((400, 100)).astype(np.float32)
    with tf.Session() as sess:
        sess.run([a.initializer, b.initializer])
        yv, got = sess.run([y, out], {x: xv})
    want = (2.0 - (0.5 * yv.astype(np.float64)).sum(-1, keepdims=True)) * yv
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
