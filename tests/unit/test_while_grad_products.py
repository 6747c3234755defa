"""A while loop's weight gradient summed as one stacked product (dtf.kernels.cpu.
control_flow: _ProductSum), against numpy: thin products kept and multiplied at the end,
wide ones multiplied each iteration, and kept operands multiplied out past the limit."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf
from dtf.kernels.cpu import control_flow


def _loop_and_grads(steps, rows, k, n, seed=0):
    """sum over t of sum(tanh(x_t @ w)), a loop over t; its value and gradients by dtf and
    by numpy."""
    rng = np.random.RandomState(seed)
    xs_value = rng.randn(steps, rows, k)
    w_value = rng.randn(k, n) * 0.3
    g = tf.Graph()
    with g.as_default():
        xs = tf.placeholder(tf.float64, [steps, rows, k])
        w = tf.Variable(w_value)

        def body(i, total):
            h = tf.tanh(tf.matmul(tf.gather(xs, i), w))
            return i + 1, total + tf.reduce_sum(h)

        _, total = tf.while_loop(lambda i, total: i < steps, body,
                                 [tf.constant(0), tf.constant(0.0, tf.float64)])
        dw, dxs = tf.gradients(total, [w, xs])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            got = sess.run([total, dw, dxs], {xs: xs_value})
    hs = np.tanh(xs_value @ w_value)
    want_dw = sum(xs_value[t].T @ (1 - hs[t] ** 2) for t in range(steps))
    want_dxs = (1 - hs ** 2) @ w_value.T
    return got, (hs.sum(), want_dw, want_dxs)


@pytest.mark.parametrize("rows, k, n", [
    (2, 8, 16),   # thin: kept, one stacked product at the end
    (64, 4, 3),   # wide: multiplied every iteration, as the body would
    (1, 5, 1),    # one row, one column
])
def test_the_weight_gradient_matches_numpy(rows, k, n):
    (total, dw, dxs), (want_total, want_dw, want_dxs) = _loop_and_grads(7, rows, k, n)
    np.testing.assert_allclose(total, want_total, rtol=1e-12)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dxs, want_dxs, rtol=1e-10, atol=1e-12)


def test_kept_operands_are_multiplied_out_past_the_limit(monkeypatch):
    monkeypatch.setattr(control_flow, "PENDING_BYTES", 300)  # a flush every few iterations
    (_, dw, _), (_, want_dw, _) = _loop_and_grads(9, 2, 8, 16, seed=1)
    np.testing.assert_allclose(dw, want_dw, rtol=1e-10, atol=1e-12)


def test_a_loop_that_never_runs_gives_zero_gradients():
    (total, dw, dxs), _ = _loop_and_grads(0, 2, 8, 16)
    assert total == 0.0
    assert dw.shape == (8, 16) and not dw.any()


def test_the_rnn_cells_weight_gradients_are_found_as_products():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [3, 5, 4])
        cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(6) for _ in range(2)])
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
    (grad_op,) = [op for op in g.get_operations() if op.type == "_WhileGrad"]
    found = control_flow._thin_products(grad_op.attrs["body"], grad_op.attrs["n_grads"])
    kernels = sorted(m.name.split("/cell_")[1].split("/")[0] for _, _, m in found.values())
    assert kernels == ["0", "1"]  # each layer's kernel; the biases' sums stay as they were
