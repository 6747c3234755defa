"""Elementwise tails fused onto a matmul (dtf.runtime.fusion.TailStep): which groups form,
that results equal the unfused graph's, that the matmul's output is overwritten only when
nothing else holds it, and that fetching the matmul keeps it out of the group."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework import errors
from dtf.framework.graph_def import NodeDef
from dtf.runtime import fusion
from dtf.runtime.executor import StepContext, ExecState
from tests.unit.test_fusion import _run_both

ROWS, K, COLS = 40, 16, 24  # 960 output elements, above the lowered threshold


@pytest.fixture(autouse=True)
def small_threshold(monkeypatch):
    monkeypatch.setattr(fusion, "TAIL_MIN_ELEMENTS", 64)
    monkeypatch.setattr(fusion, "ENABLED", True)


def _ops(sess, fetches, feeds):
    plan = sess._backend._executor.plan(tuple(t.name for t in fetches), tuple(t.name for t in feeds), ())
    return [step[4].op for step in plan.constants + plan.steps], [s[0] for s in plan.steps if isinstance(s[0], fusion.FusedStep)]


def _dense_inputs(dtype=np.float32, rows=ROWS):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((rows, K)).astype(dtype), rng.standard_normal((K, COLS)).astype(dtype),
            rng.standard_normal(COLS).astype(dtype))


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("bias_op", ["add", "bias_add"])
def test_dense_layer_tail_fuses_and_matches_unfused(dtype, bias_op):
    xv, wv, bv = _dense_inputs(dtype.as_numpy_dtype)
    x = tf.placeholder(dtype, [None, K])
    w = tf.placeholder(dtype, [K, COLS])
    b = tf.placeholder(dtype, [COLS])
    pre = tf.matmul(x, w) + b if bias_op == "add" else tf.nn.bias_add(tf.matmul(x, w), b)
    y = tf.nn.relu(pre) * 2.0
    feed = {x: xv, w: wv, b: bv}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        ops, (step,) = _ops(sess, [y], [x, w, b])
    assert ops[-1] == f"Fused(MatMul,{'Add' if bias_op == 'add' else 'BiasAdd'},Relu,Mul)"
    assert isinstance(step, fusion.TailStep) and list(step._kernels) == ["rso"]  # b, 2.0, the matmul in place
    unfused = _run_both(y, feed)[1]
    np.testing.assert_array_equal(got, unfused)
    np.testing.assert_allclose(got, np.maximum(xv @ wv + bv, 0) * 2, rtol=1e-5, atol=1e-5)


def test_batch_matmul_head_with_a_full_addend_and_a_row():
    rng = np.random.default_rng(1)
    a = tf.placeholder(tf.float32, [3, ROWS, K])
    m = tf.placeholder(tf.float32, [3, K, COLS])
    z = tf.placeholder(tf.float32, [3, ROWS, COLS])
    r = tf.placeholder(tf.float32, [ROWS, COLS])
    y = tf.abs(tf.matmul(a, m) - z) + r
    feed = {a: rng.standard_normal((3, ROWS, K)).astype(np.float32),
            m: rng.standard_normal((3, K, COLS)).astype(np.float32),
            z: rng.standard_normal((3, ROWS, COLS)).astype(np.float32),
            r: rng.standard_normal((ROWS, COLS)).astype(np.float32)}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        ops, (step,) = _ops(sess, [y], [a, m, z, r])
    assert ops[-1] == "Fused(BatchMatMulV2,Sub,Abs,Add)" and list(step._kernels) == ["aro"]
    np.testing.assert_allclose(got, _run_both(y, feed)[1], rtol=1e-6, atol=1e-6)


def test_a_non_contiguous_addend_is_read_correctly():
    xv, wv, _ = _dense_inputs()
    zv = np.asfortranarray(np.random.default_rng(4).standard_normal((ROWS, COLS)).astype(np.float32))
    x = tf.placeholder(tf.float32, [None, K])
    w = tf.placeholder(tf.float32, [K, COLS])
    z = tf.placeholder(tf.float32, [None, COLS])
    y = tf.nn.relu(tf.matmul(x, w) * z)
    feed = {x: xv, w: wv, z: zv}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        ops, _ = _ops(sess, [y], [x, w, z])
    assert ops == ["Fused(MatMul,Mul,Relu)"]
    np.testing.assert_array_equal(got, _run_both(y, feed)[1])


def test_a_fetched_or_shared_matmul_stays_out_of_the_group():
    xv, wv, bv = _dense_inputs()
    x = tf.placeholder(tf.float32, [None, K])
    w = tf.placeholder(tf.float32, [K, COLS])
    b = tf.placeholder(tf.float32, [COLS])
    h = tf.matmul(x, w)
    y = tf.nn.relu(h + b)
    twice = tf.nn.relu(h + b) + tf.square(h)
    feed = {x: xv, w: wv, b: bv}
    with tf.Session() as sess:
        got_y, got_h = sess.run([y, h], feed)
        ops, _ = _ops(sess, [y, h], [x, w, b])
        assert ops == ["MatMul", "Fused(Add,Relu)"]
        got_twice = sess.run(twice, feed)
        ops, _ = _ops(sess, [twice], [x, w, b])
        assert ops == ["MatMul", "Fused(Add,Relu,Square,Add)"]
    np.testing.assert_array_equal(got_h, xv @ wv)
    np.testing.assert_array_equal(got_y, np.maximum(xv @ wv + bv, 0))
    np.testing.assert_allclose(got_twice, np.maximum(xv @ wv + bv, 0) + np.square(xv @ wv), rtol=1e-6)


def test_a_group_keeps_one_head():
    xv, wv, _ = _dense_inputs()
    x = tf.placeholder(tf.float32, [None, K])
    w = tf.placeholder(tf.float32, [K, COLS])
    y = tf.nn.relu(tf.matmul(x, w) - tf.matmul(x, w * 0.5))
    feed = {x: xv, w: wv}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        ops, _ = _ops(sess, [y], [x, w])
    assert sorted(ops) == ["Const", "Fused(MatMul,Sub,Relu)", "MatMul", "Mul"]
    np.testing.assert_allclose(got, np.maximum(xv @ wv - xv @ (wv * 0.5), 0), rtol=1e-5, atol=1e-5)


def test_nchw_bias_add_is_not_a_row_and_stays_unfused():
    x = tf.placeholder(tf.float32, [2, 3, 4, 3])
    b = tf.placeholder(tf.float32, [3])
    y = tf.nn.relu(tf.nn.bias_add(x, b, data_format="NCHW"))
    feed = {x: np.arange(72, dtype=np.float32).reshape(2, 3, 4, 3) - 30, b: np.float32([-5, 0, 5])}
    with tf.Session() as sess:
        got = sess.run(y, feed)
        ops, _ = _ops(sess, [y], [x, b])
    assert ops == ["BiasAdd", "Relu"]
    np.testing.assert_array_equal(got, np.maximum(feed[x] + feed[b].reshape(1, 3, 1, 1), 0))


@pytest.mark.parametrize("rows", [0, 2])
def test_small_and_empty_outputs_run_unfused(rows):
    xv, wv, bv = _dense_inputs(rows=rows)
    x = tf.placeholder(tf.float32, [None, K])
    w = tf.placeholder(tf.float32, [K, COLS])
    b = tf.placeholder(tf.float32, [COLS])
    y = tf.nn.relu(tf.matmul(x, w) + b)
    with tf.Session() as sess:
        got = sess.run(y, {x: xv, w: wv, b: bv})
        _, (step,) = _ops(sess, [y], [x, w, b])
    assert step._kernels == {} and got.shape == (rows, COLS)
    np.testing.assert_array_equal(got, np.maximum(xv @ wv + bv, 0))


def test_gradients_of_a_dense_layer_match_unfused():
    xv, wv, bv = _dense_inputs()
    x = tf.placeholder(tf.float32, [None, K])
    w = tf.placeholder(tf.float32, [K, COLS])
    b = tf.placeholder(tf.float32, [COLS])
    loss = tf.reduce_sum(tf.square(tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))))
    grads = tf.gradients(loss, [x, w, b])
    fused_grads, unfused_grads = _run_both(grads, {x: xv, w: wv, b: bv})
    for g, u in zip(fused_grads, unfused_grads):
        np.testing.assert_allclose(g, u, rtol=1e-5, atol=1e-5)


def test_conv_bias_relu_stays_one_group_when_its_gradients_are_taken():
    """The relu's gradient reads the relu's output (as TF 1.15's does), not its input, so
    the pre-activation has no reader but the relu and the whole layer is one tail."""
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    wv = rng.standard_normal((3, 3, 3, 8)).astype(np.float32)
    bv = rng.standard_normal(8).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 7, 6, 3])
    w = tf.placeholder(tf.float32, [3, 3, 3, 8])
    b = tf.placeholder(tf.float32, [8])
    h = tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME") + b)
    loss = tf.reduce_sum(tf.square(h))
    grads = tf.gradients(loss, [x, w, b])
    assert grads[0].graph.get_operation_by_name(
        "gradients/Relu_grad/ReluGrad").inputs[1].op.type == "Relu"
    feed = {x: xv, w: wv, b: bv}
    with tf.Session() as sess:
        got = sess.run(grads, feed)
        ops, _ = _ops(sess, grads, [x, w, b])
    assert "Fused(Conv2D,Add,Relu)" in ops and "Relu" not in ops
    for g, u in zip(got, _run_both(grads, feed)[1]):
        np.testing.assert_allclose(g, u, rtol=1e-5, atol=1e-5)


def test_errors_in_the_head_name_the_matmul():
    x = tf.placeholder(tf.float32, [None, None])
    w = tf.placeholder(tf.float32, [None, COLS])
    y = tf.nn.relu(tf.matmul(x, w, name="dense") + 1.0)
    with tf.Session() as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(y, {x: np.ones((ROWS, K), np.float32), w: np.ones((K + 1, COLS), np.float32)})
    assert info.value.message.startswith('MatMul "dense": ')


def _tail_step(head):
    """MatMul-like head ``head()`` followed by Relu(head + input 0), as a TailStep."""
    def node(name, op):
        return NodeDef(name, op, [], [], "", {}, [tf.float32])

    relu = lambda ctx, v: np.maximum(v, np.float32(0))  # noqa: E731
    members = [(lambda ctx: head(), (), node("h", "MatMul")),
               (lambda ctx, u, v: u + v, (1, 0), node("a", "Add")),
               (relu, (2,), node("r", "Relu"))]
    return fusion.TailStep(members, 1, "float32"), StepContext(ExecState())


def test_the_head_output_is_overwritten_only_when_nothing_else_holds_it():
    held = np.full((ROWS, COLS), -1.0, np.float32)
    step, ctx = _tail_step(lambda: held)
    one = np.ones(COLS, np.float32)
    out = step(ctx, one)
    np.testing.assert_array_equal(held, -1.0)  # a cached result of the head is left alone
    np.testing.assert_array_equal(out, 0.0)
    assert list(step._kernels) == ["ra"]

    made = []

    def fresh():
        arr = np.full((ROWS, COLS), 2.0, np.float32)
        made.append(id(arr))
        return arr

    step, ctx = _tail_step(fresh)
    out = step(ctx, one)
    assert id(out) == made[-1]  # written in place into the head's fresh output
    np.testing.assert_array_equal(out, 3.0)
    assert list(step._kernels) == ["ro"]
