"""RNN cells and drivers beyond the TF goldens (tests/goldens/cases_rnn.py): wrappers,
concatenated states, reuse, finite-difference gradients and argument errors."""
import numpy as np
import pytest

import dtf as tf

rnn_cell = tf.nn.rnn_cell


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_dynamic_rnn_gradient_matches_finite_differences():
    # (tests/opcheck.check_gradient runs no initializers: the same central differences here)
    x = tf.placeholder(tf.float64, [2, 3, 2])
    cell = rnn_cell.LSTMCell(3, use_peepholes=True, num_proj=2, dtype=tf.float64)
    out, st = tf.nn.dynamic_rnn(cell, x, sequence_length=[3, 2], dtype=tf.float64)
    loss = tf.reduce_sum(out * out) + tf.reduce_sum(st.c)
    kernel = tf.trainable_variables()[0]
    dx, dk = tf.gradients(loss, [x, kernel])
    xv = np.random.RandomState(0).randn(2, 3, 2) * 0.5
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        sym_x, sym_k, kv = s.run([dx, dk, kernel], {x: xv})
        for value, sym, feed in ((xv, sym_x, lambda v: {x: v}),
                                 (kv, sym_k, lambda v: {x: xv, kernel: v})):
            num = np.zeros_like(value)
            for idx in np.ndindex(value.shape):
                plus, minus = value.copy(), value.copy()
                plus[idx] += 1e-5
                minus[idx] -= 1e-5
                num[idx] = (s.run(loss, feed(plus)) - s.run(loss, feed(minus))) / 2e-5
            np.testing.assert_allclose(sym, num, rtol=1e-4, atol=1e-6)


def test_state_not_tuple_and_residual_and_dropout_wrappers():
    x = tf.constant(np.random.RandomState(1).randn(2, 4, 3).astype(np.float32))
    lstm = rnn_cell.BasicLSTMCell(3, state_is_tuple=False)
    assert lstm.state_size == 6
    wrapped = rnn_cell.ResidualWrapper(rnn_cell.DropoutWrapper(lstm, output_keep_prob=1.0))
    out, st = tf.nn.dynamic_rnn(wrapped, x, dtype=tf.float32)
    assert [v.op.name for v in tf.global_variables()] == ["rnn/basic_lstm_cell/kernel",
                                                           "rnn/basic_lstm_cell/bias"]
    dropped, _ = tf.nn.dynamic_rnn(rnn_cell.DropoutWrapper(rnn_cell.GRUCell(3), input_keep_prob=0.5,
                                                          seed=3), x, dtype=tf.float32, scope="d")
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        o, state, xv, d = s.run([out, st, x, dropped])
    assert state.shape == (2, 6)
    # residual: output = cell output + input, and |cell output| < 1 (tanh * sigmoid)
    assert np.all(np.abs(o - xv) < 1.0)
    assert np.isfinite(d).all()
    with pytest.raises(NotImplementedError, match="variational_recurrent"):
        rnn_cell.DropoutWrapper(lstm, variational_recurrent=True)


def test_second_call_reuses_the_cells_variables_and_scopes_uniquify():
    x = tf.placeholder(tf.float32, [2, 3, 4])
    cell = rnn_cell.BasicRNNCell(5)
    tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    with tf.variable_scope("rnn", reuse=True):
        tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")
    other = rnn_cell.BasicRNNCell(5)
    tf.nn.static_rnn(other, tf.unstack(x, axis=1), dtype=tf.float32, scope="rnn2")
    names = [v.op.name for v in tf.global_variables()]
    assert names == ["rnn/basic_rnn_cell/kernel", "rnn/basic_rnn_cell/bias",
                     "rnn2/basic_rnn_cell/kernel", "rnn2/basic_rnn_cell/bias"]


def test_training_a_dynamic_rnn_lowers_the_loss():
    rng = np.random.RandomState(2)
    x = tf.constant(rng.randn(8, 5, 3).astype(np.float32))
    y = tf.constant((rng.rand(8) > 0.5).astype(np.float32))
    out, st = tf.nn.dynamic_rnn(rnn_cell.GRUCell(4), x, dtype=tf.float32)
    w = tf.Variable(tf.zeros([4, 1]))
    logits = tf.reshape(tf.matmul(st, w), [-1])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        first = s.run(loss)
        for _ in range(30):
            s.run(train)
        assert s.run(loss) < first * 0.8


def test_argument_errors():
    x = tf.placeholder(tf.float32, [2, 3, 4])
    with pytest.raises(ValueError, match="must give a dtype"):
        tf.nn.dynamic_rnn(rnn_cell.GRUCell(2), x)
    with pytest.raises(NotImplementedError, match="num_unit_shards"):
        rnn_cell.LSTMCell(3, num_unit_shards=2)
    with pytest.raises(ValueError, match="at least one cell"):
        rnn_cell.MultiRNNCell([])
    assert tf.contrib.rnn.LSTMStateTuple is rnn_cell.LSTMStateTuple
