"""RNN cells and drivers: variable names, outputs, final states and gradients, with every
weight set from a seeded RandomState (initializers' random streams differ).

TensorFlow 2.x serves tf.nn.rnn_cell only with the tf_keras package; without it the same
TF 1.x cells and drivers are read from TensorFlow's own legacy modules."""
import numpy as np

from tests.goldens.harness import case


def _rnn(tf):
    """(cells, drivers): tf.nn.rnn_cell and tf.nn, or TensorFlow's legacy modules."""
    if not tf.__name__.startswith("tensorflow"):
        return tf.nn.rnn_cell, tf.nn
    from tensorflow.python.keras.layers.legacy_rnn import rnn_cell_impl
    from tensorflow.python.ops import rnn
    return rnn_cell_impl, rnn


def _set_weights(tf, sess, seed):
    rng = np.random.RandomState(seed)
    for v in sorted(tf.trainable_variables(), key=lambda v: v.op.name):
        shape = v.shape.as_list()
        sess.run(tf.assign(v, (rng.randn(*shape) * 0.4).astype(np.float32)))
    return {"names": [v.op.name for v in tf.global_variables()]}


def _run(tf, fetches, feeds, seed):
    loss = tf.add_n([tf.reduce_sum(t * t) for t in fetches.values()])
    grads = tf.gradients(loss, sorted(tf.trainable_variables(), key=lambda v: v.op.name)
                         + list(feeds))

    def run(sess):
        out = _set_weights(tf, sess, seed)
        values = sess.run(fetches, feeds)
        out.update(values)
        for k, g in enumerate(sess.run(grads, feeds)):
            out[f"grad{k}"] = g
        return out
    return run


@case(rtol=1e-4, atol=1e-5)
def dynamic_rnn_stacked_lstm_gru_with_lengths(tf):
    rng = np.random.RandomState(10)
    rc, nn = _rnn(tf)
    x = tf.placeholder(tf.float32, [3, 5, 4])
    cell = rc.MultiRNNCell([rc.BasicLSTMCell(6), rc.GRUCell(5)])
    out, (s0, s1) = nn.dynamic_rnn(cell, x, sequence_length=[5, 3, 1], dtype=tf.float32)
    return _run(tf, {"out": out, "c": s0.c, "h": s0.h, "gru": s1}, {x: rng.randn(3, 5, 4).astype(np.float32)}, 11)


@case(rtol=1e-4, atol=1e-5)
def dynamic_rnn_lstm_cell_peepholes_projection_time_major(tf):
    rng = np.random.RandomState(12)
    rc, nn = _rnn(tf)
    x = tf.placeholder(tf.float32, [4, 2, 3])
    cell = rc.LSTMCell(5, use_peepholes=True, cell_clip=0.8, num_proj=3, proj_clip=0.5)
    init = cell.zero_state(2, tf.float32)
    out, st = nn.dynamic_rnn(cell, x, initial_state=init, time_major=True, scope="proj")
    return _run(tf, {"out": out, "c": st.c, "h": st.h}, {x: rng.randn(4, 2, 3).astype(np.float32)}, 13)


@case(rtol=1e-4, atol=1e-5)
def bidirectional_dynamic_rnn_with_lengths(tf):
    rng = np.random.RandomState(14)
    rc, nn = _rnn(tf)
    x = tf.placeholder(tf.float32, [2, 4, 3])
    (fw, bw), (sf, sb) = nn.bidirectional_dynamic_rnn(
        rc.BasicRNNCell(4), rc.BasicLSTMCell(3), x,
        sequence_length=[4, 2], dtype=tf.float32)
    return _run(tf, {"fw": fw, "bw": bw, "sf": sf, "sbc": sb.c, "sbh": sb.h},
                {x: rng.randn(2, 4, 3).astype(np.float32)}, 15)


@case(rtol=1e-4, atol=1e-5)
def static_rnn_and_static_bidirectional(tf):
    rng = np.random.RandomState(16)
    rc, nn = _rnn(tf)
    xs = [tf.placeholder(tf.float32, [2, 3]) for _ in range(3)]
    outs, st = nn.static_rnn(rc.GRUCell(4), xs, dtype=tf.float32, sequence_length=[3, 2])
    bouts, bsf, bsb = nn.static_bidirectional_rnn(
        rc.BasicLSTMCell(2), rc.BasicLSTMCell(2), xs, dtype=tf.float32,
        sequence_length=[1, 3])
    fetches = {"o0": outs[0], "o2": outs[2], "st": st, "b0": bouts[0], "b2": bouts[2],
               "bsf": bsf.h, "bsb": bsb.c}
    return _run(tf, fetches, {x: rng.randn(2, 3).astype(np.float32) for x in xs}, 17)


@case
def reverse_sequence_values(tf):
    x = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    a = tf.reverse_sequence(x, [2, 3], seq_axis=1, batch_axis=0)
    b = tf.reverse_sequence(x, [4, 1, 0], seq_axis=2, batch_axis=1)
    g = tf.gradients(tf.reduce_sum(a * tf.range(24.0)[:, None][:4, 0]), x)[0]
    return {"a": a, "b": b, "g": g}
