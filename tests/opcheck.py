"""Shared checks for op tests: forward results against the numpy reference, and
gradients against central finite differences."""
from __future__ import annotations

import numpy as np

import dtf as tf
from dtf.kernels.reference import REFERENCE


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def check_against_reference(tensor, feed_dict=None, rtol=1e-5, atol=1e-6):
    """Runs ``tensor`` through the CPU kernel and through REFERENCE on the same input
    values; asserts they agree and returns the result."""
    op = tensor.op
    with tf.Session() as sess:
        got, inputs = sess.run([tensor, list(op.inputs)], feed_dict)
    want = REFERENCE[op.type](op.attrs, *[np.asarray(i) for i in inputs])
    if isinstance(want, tuple):
        want = want[tensor.value_index]
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64) if np.asarray(got).dtype != object else got,
                               np.asarray(want, dtype=np.float64) if np.asarray(want).dtype != object else want,
                               rtol=rtol, atol=atol)
    return got


def numeric_gradient(f_build, x_values, delta=1e-3):
    """d sum(f(x)) / dx by central differences, in float64."""
    xs = [tf.placeholder(tf.float64, np.shape(v)) for v in x_values]
    y = tf.reduce_sum(f_build(*xs))
    grads_sym = tf.gradients(y, xs)
    with tf.Session() as sess:
        feed = {x: v for x, v in zip(xs, x_values)}
        # IndexedSlices gradients (of gathers) are compared densified.
        sym = sess.run([tf.convert_to_tensor(g) if g is not None else tf.zeros_like(x)
                        for g, x in zip(grads_sym, xs)], feed)
        nums = []
        for i, v in enumerate(x_values):
            v = np.array(v, dtype=np.float64)
            num = np.zeros_like(v)
            it = np.nditer(v, flags=["multi_index"])
            for _ in it:
                idx = it.multi_index
                plus, minus = v.copy(), v.copy()
                plus[idx] += delta
                minus[idx] -= delta
                fp = sess.run(y, {**feed, xs[i]: plus})
                fm = sess.run(y, {**feed, xs[i]: minus})
                num[idx] = (fp - fm) / (2 * delta)
            nums.append(num)
    return sym, nums


def check_gradient(f_build, x_values, rtol=1e-3, atol=1e-4, delta=1e-3):
    """Asserts the symbolic gradient of sum(f(*xs)) matches finite differences."""
    x_values = [np.asarray(v, dtype=np.float64) for v in x_values]
    sym, num = numeric_gradient(f_build, x_values, delta)
    for s, n in zip(sym, num):
        np.testing.assert_allclose(s, n, rtol=rtol, atol=atol)
