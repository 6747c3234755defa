"""Convolutions and large float32 products on oneDNN (dtf.kernels.cpu.onednn) against the
numpy reference: the CNN's and the ResNet step's layers served by the library's JIT
kernels, transposed and strided operands read in place, concurrent calls of one primitive,
what stays with our own kernels, and Adam's update in pieces. The shape-by-shape
comparison of all three convolution kernels (odd sizes, strides 1 and 2, SAME and VALID,
dilation, batch 1, empty batches) runs both paths in tests/unit/test_conv_fast.py."""
import threading

import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import NodeDef
from dtf.kernels import registry
from dtf.kernels.cpu import adam_fast, adam_jit, blas, conv_fast, onednn, state
from dtf.kernels.reference import REFERENCE

needs_onednn = pytest.mark.skipif(onednn.library() is None, reason="oneDNN is not installed")

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def enabled(monkeypatch):
    monkeypatch.setattr(onednn, "ENABLED", True)


def attrs(strides=(1, 1), padding="SAME"):
    return {"T": tf.float32, "strides": [1, *strides, 1], "padding": padding,
            "data_format": "NHWC", "dilations": [1, 1, 1, 1], "use_cudnn_on_gpu": True,
            "explicit_paddings": []}


def kernel(op, a):
    node = NodeDef(f"test_{op}", op, [], [], "", dict(a), [a["T"]])
    return registry.lookup(op, "CPU", node.dtype_key).factory(node)


def plan(x_shape, w_shape, a):
    node = NodeDef("plan", "Conv2D", [], [], "", dict(a), [a["T"]])
    return conv_fast.ConvPlan(node, x_shape, w_shape, 4)


def close(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("x_shape,w_shape", [
    ((64, 28, 28, 1), (5, 5, 1, 32)),    # the CNN's conv1
    ((64, 14, 14, 32), (5, 5, 32, 64)),  # the CNN's conv2
    ((64, 32, 32, 16), (3, 3, 16, 16)),  # the ResNet step's layers
])
@needs_onednn
def test_model_layers_run_on_the_librarys_jit_kernels(x_shape, w_shape):
    g = plan(x_shape, w_shape, attrs())
    kinds = ["forward", "filter"] + (["input"] if x_shape[3] >= onednn.MIN_INPUT_GRAD_CHANNELS
                                     else [])
    for kind in kinds:
        impl = onednn.implementation(kind, g)
        assert impl is not None and not impl.startswith("ref"), (kind, impl)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    close(onednn.conv2d(g, x, w), REFERENCE["Conv2D"](attrs(), x, w))
    dy = RNG.standard_normal((x_shape[0], g.oh, g.ow, w_shape[3])).astype(np.float32)
    sizes = np.array(w_shape, np.int32)
    close(onednn.conv2d_backprop_filter(g, x, dy),
          REFERENCE["Conv2DBackpropFilter"](attrs(), x, sizes, dy))


@needs_onednn
def test_input_gradient_of_few_input_channels_stays_with_our_kernels():
    g = plan((2, 9, 9, 1), (5, 5, 1, 8), attrs())
    w = RNG.standard_normal((5, 5, 1, 8)).astype(np.float32)
    dy = RNG.standard_normal((2, 9, 9, 8)).astype(np.float32)
    assert onednn.conv2d_backprop_input(g, w, dy) is None
    sizes = np.array((2, 9, 9, 1), np.int32)
    close(kernel("Conv2DBackpropInput", attrs())(None, sizes, w, dy),
          REFERENCE["Conv2DBackpropInput"](attrs(), sizes, w, dy))


@needs_onednn
def test_float64_and_disabled_path_are_not_served(monkeypatch):
    g = plan((2, 6, 6, 8), (3, 3, 8, 8), attrs())
    x = RNG.standard_normal((2, 6, 6, 8))
    assert onednn.conv2d(g, x, RNG.standard_normal((3, 3, 8, 8))) is None
    assert onednn.conv2d(g, x.astype(np.float32), RNG.standard_normal((3, 3, 8, 8))) is None
    monkeypatch.setattr(onednn, "ENABLED", False)
    assert onednn.conv2d(g, x.astype(np.float32), np.ones((3, 3, 8, 8), np.float32)) is None
    assert onednn.matmul(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32)) is None


@needs_onednn
def test_one_primitive_runs_on_several_threads_at_once():
    a = attrs((2, 2), "SAME")
    conv, grad = kernel("Conv2D", a), kernel("Conv2DBackpropFilter", a)
    xs = [RNG.standard_normal((6, 15, 13, 8)).astype(np.float32) for _ in range(4)]
    w = RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)
    sizes = np.array(w.shape, np.int32)
    want = [(conv(None, x, w), grad(None, x, sizes, conv(None, x, w))) for x in xs]
    got = [None] * len(xs)

    def run(i):
        for _ in range(20):
            y = conv(None, xs[i], w)
            got[i] = (y, grad(None, xs[i], sizes, y))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (y, dw), (y0, dw0) in zip(got, want):
        np.testing.assert_array_equal(y, y0)
        np.testing.assert_array_equal(dw, dw0)


@needs_onednn
def test_filter_gradient_rejects_a_wrong_output_gradient():
    grad = kernel("Conv2DBackpropFilter", attrs())
    x = np.ones((2, 8, 8, 8), np.float32)
    with pytest.raises(ValueError, match="out_backprop shape"):
        grad(None, x, np.array((3, 3, 8, 8), np.int32), np.ones((2, 8, 8, 4), np.float32))


@needs_onednn
@pytest.mark.parametrize("m,k,n", [(300, 257, 129), (1, 5000, 1000), (2048, 3, 7), (64, 3136, 1024)])
def test_matmul_reads_transposed_and_strided_operands_in_place(m, k, n):
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    wide = RNG.standard_normal((m, 2 * k)).astype(np.float32)[:, ::2]  # neither layout: copied
    for left in (a, np.asfortranarray(a), wide):
        for right in (b, np.asfortranarray(b)):
            want = left.astype(np.float64) @ right
            got = onednn.matmul(left, right)
            assert got.dtype == np.float32 and got.shape == (m, n)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))


@needs_onednn
def test_matmul_leaves_mismatched_shapes_to_numpy_and_propagates_nan():
    assert onednn.matmul(np.ones((4, 5), np.float32), np.ones((6, 7), np.float32)) is None
    with pytest.raises(ValueError):
        blas.matmul(np.ones((512, 512), np.float32), np.ones((600, 512), np.float32))
    a = np.ones((512, 512), np.float32)
    a[3, 7] = np.nan
    out = blas.matmul(a, np.ones((512, 512), np.float32))
    assert np.isnan(out[3]).all() and not np.isnan(np.delete(out, 3, axis=0)).any()


def test_adam_in_pieces_equals_one_pass(monkeypatch):
    n = 3 * (1 << 17) + 1001
    var, m, v, g = (RNG.random(n, dtype=np.float32) for _ in range(4))
    scalars = (np.float32(1e-3), np.float32(0.1), np.float32(1e-3), np.float32(1e-8), False)
    whole = [np.empty(n, np.float32) for _ in range(3)]
    adam_jit.adam_into(var, m, v, g, *scalars, *whole)
    monkeypatch.setattr(state, "PARALLEL_UPDATE_MIN", 1)
    pieces = [np.empty(n, np.float32) for _ in range(3)]
    adam_fast._over_pieces(adam_jit.adam_into, [var, m, v, g, *pieces], scalars)
    for a, b in zip(pieces, whole):
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def served(monkeypatch):
    """Whether each call of an epilogue was served by the library (True) or declined."""
    from dtf.kernels.cpu import epilogues

    calls = []
    real = epilogues.run

    def run(*args):
        y = real(*args)
        calls.append(y is not None)
        return y

    monkeypatch.setattr(epilogues, "run", run)
    return calls


def test_epilogue_plan_recognises_bias_and_relu_tails_only():
    from dtf.kernels.cpu import epilogues

    # (op, args) numbered as fusion.TailStep does: the bias is 0, the head's result 1.
    assert epilogues.plan("Conv2D", (("BiasAdd", (1, 0)), ("Relu", (2,))), 1) is True
    assert epilogues.plan("Conv2D", (("Add", (0, 1)), ("Relu", (2,))), 1) is True
    assert epilogues.plan("Conv2D", (("Add", (1, 0)),), 1) is False
    assert epilogues.plan("Conv2D", (("BiasAdd", (0, 1)),), 1) is None  # bias first: not a bias add
    assert epilogues.plan("Conv2D", (("Sub", (1, 0)), ("Relu", (2,))), 1) is None
    assert epilogues.plan("Conv2D", (("Add", (1, 0)), ("Tanh", (2,))), 1) is None
    assert epilogues.plan("Conv2D", (("Relu", (0,)),), 0) is None
    assert epilogues.plan("MatMul", (("Add", (1, 0)), ("Relu", (2,))), 1) is True
    assert epilogues.plan("BatchMatMulV2", (("Add", (1, 0)), ("Relu", (2,))), 1) is None


@needs_onednn
@pytest.mark.parametrize("bias_op", ["add", "bias_add", "add_row4"])
@pytest.mark.parametrize("relu", [True, False])
def test_fused_conv_bias_relu_in_a_session_matches_numpy(bias_op, relu, served):
    x = RNG.standard_normal((4, 11, 9, 8)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)
    b = RNG.standard_normal(16).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        xp = tf.placeholder(tf.float32, [None, 11, 9, 8])
        y = tf.nn.conv2d(xp, tf.constant(w), [1, 2, 2, 1], "SAME")
        if bias_op == "add":
            y = y + tf.constant(b)
        elif bias_op == "bias_add":
            y = tf.nn.bias_add(y, tf.constant(b))
        else:  # a [1, 1, 1, 16] bias: not a vector, so the tail runs as before
            y = y + tf.constant(b.reshape(1, 1, 1, 16))
        if relu:
            y = tf.nn.relu(y)
    with tf.Session(graph=g) as sess:
        got = sess.run(y, {xp: x})
    want = REFERENCE["Conv2D"](attrs((2, 2)), x, w) + b
    if relu:
        want = np.maximum(want, 0)
    close(got, want.astype(np.float32))
    # The library took the tail in, except for the 4-D bias (the tail's own pass ran).
    assert served and all(served) == (bias_op != "add_row4")


@needs_onednn
@pytest.mark.parametrize("rows,transpose_b,relu", [(256, False, True), (300, True, False),
                                                   (4, False, True)])
def test_fused_dense_layer_matches_numpy(rows, transpose_b, relu, served):
    x = RNG.standard_normal((rows, 784)).astype(np.float32)
    w = RNG.standard_normal((1024, 784) if transpose_b else (784, 1024)).astype(np.float32)
    b = RNG.standard_normal(1024).astype(np.float32)
    g = tf.Graph()
    with g.as_default():
        xp = tf.placeholder(tf.float32, [None, 784])
        y = tf.matmul(xp, tf.constant(w), transpose_b=transpose_b) + tf.constant(b)
        if relu:
            y = tf.nn.relu(y)
    with tf.Session(graph=g) as sess:
        got = sess.run(y, {xp: x})
    want = x.astype(np.float64) @ (w.T if transpose_b else w) + b
    if relu:
        want = np.maximum(want, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    # The library takes the tail in for large products only (4 rows: OpenBLAS and the pass).
    assert served and all(served) == (rows >= 256)
