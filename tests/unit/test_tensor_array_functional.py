"""tf.TensorArray (read/write/stack/unstack/gather/scatter/size/concat, dynamic_size,
element_shape) and tf.map_fn / tf.scan / tf.foldl / tf.foldr: values and gradients."""
import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_tensor_array_basic_methods():
    ta = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    ta = ta.write(0, [1.0, 2.0]).write(2, [5.0, 6.0])
    ta = ta.scatter([1], [[3.0, 4.0]])
    assert ta.stack().shape.as_list() == [3, 2]
    with tf.Session() as s:
        got = s.run([ta.stack(), ta.read(1), ta.size(), ta.gather([2, 0]), ta.concat()])
    np.testing.assert_allclose(got[0], [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_allclose(got[1], [3, 4])
    assert got[2] == 3
    np.testing.assert_allclose(got[3], [[5, 6], [1, 2]])
    np.testing.assert_allclose(got[4], [1, 2, 3, 4, 5, 6])


def test_tensor_array_errors_at_run_time():
    fixed = tf.TensorArray(tf.float32, size=2).write(2, 1.0)
    mixed = tf.TensorArray(tf.float32, size=2).write(0, [1.0]).write(1, tf.placeholder_with_default([1.0, 2.0], [None]))
    with tf.Session() as s:
        with pytest.raises(tf.errors.InvalidArgumentError, match="not resizeable and size is: 2"):
            s.run(fixed.stack())
        with pytest.raises(tf.errors.InvalidArgumentError, match="incompatible with the TensorArray"):
            s.run(mixed.stack())


def test_dynamic_size_grows_inside_a_loop_and_unknown_element_shape():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    _, ta = tf.while_loop(lambda i, t: i < 4,
                          lambda i, t: (i + 1, t.write(i, tf.fill([3], tf.cast(i, tf.float32)))),
                          [tf.constant(0), ta])
    with tf.Session() as s:
        stacked, size = s.run([ta.stack(), ta.size()])
    assert size == 4 and stacked.shape == (4, 3) and stacked[3, 0] == 3.0


def test_tensor_array_gradient_through_loop_matches_finite_differences():
    def build(x):
        n = tf.shape(x)[0]
        inp = tf.TensorArray(tf.float64, size=n).unstack(x)
        out = tf.TensorArray(tf.float64, size=n)
        _, out = tf.while_loop(lambda i, o: i < n, lambda i, o: (i + 1, o.write(i, tf.sin(inp.read(i)) * inp.read(0))),
                               [tf.constant(0), out])
        return out.stack()

    check_gradient(build, [np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.9]])])


def test_map_fn_structures_and_dtype():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    doubled = tf.map_fn(lambda r: r * 2.0, x)
    pair = tf.map_fn(lambda r: (r[0], tf.cast(r[1], tf.int32)), x, dtype=(tf.float32, tf.int32))
    summed = tf.map_fn(lambda e: e["a"] + e["b"], {"a": x, "b": x * 10.0}, dtype=tf.float32)
    assert doubled.shape.as_list() == [3, 2]
    with tf.Session() as s:
        d, p, sm = s.run([doubled, pair, summed])
    np.testing.assert_allclose(d, np.arange(6).reshape(3, 2) * 2)
    np.testing.assert_allclose(p[0], [0, 2, 4])
    assert p[1].dtype == np.int32 and p[1].tolist() == [1, 3, 5]
    np.testing.assert_allclose(sm, np.arange(6).reshape(3, 2) * 11)
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        tf.map_fn(lambda e: e, tf.constant(1.0))


def test_scan_foldl_foldr_values():
    x = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    v = tf.constant([1.0, 2.0, 3.0])
    with tf.Session() as s:
        got = s.run([tf.scan(lambda a, r: a + r, x),
                     tf.scan(lambda a, r: a + r, x, initializer=tf.zeros([2]), reverse=True),
                     tf.foldl(lambda a, r: a * 2.0 + r, v),
                     tf.foldr(lambda a, r: a * 2.0 + r, v, initializer=0.0),
                     tf.foldl(lambda a, e: a + e[0] * e[1], (v, v * 2.0), initializer=0.0)])
    np.testing.assert_allclose(got[0], [[0, 1], [2, 4], [6, 9]])
    np.testing.assert_allclose(got[1], [[6, 9], [6, 8], [4, 5]])
    assert got[2] == 11.0 and got[3] == 17.0 and got[4] == 28.0


@pytest.mark.parametrize("which", ["map_fn", "scan", "foldl", "foldr"])
def test_functional_gradients_match_finite_differences(which):
    def build(x, w):
        if which == "map_fn":
            return tf.map_fn(lambda r: tf.tanh(r * w), x)
        if which == "scan":
            return tf.scan(lambda a, r: tf.sin(a * w + r), x)
        fold = tf.foldl if which == "foldl" else tf.foldr
        return fold(lambda a, r: a * w + tf.sin(r), x)

    check_gradient(build, [np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.9]]), np.array([0.7, -1.2])])


def test_tensor_array_through_cond():
    p = tf.placeholder(tf.bool, [])
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[])
    out = tf.cond(p, lambda: ta.write(0, 1.0).write(1, 2.0), lambda: ta.write(1, 5.0))
    assert isinstance(out, tf.TensorArray)
    with tf.Session() as s:
        assert s.run(out.stack(), {p: True}).tolist() == [1.0, 2.0]
        assert s.run(out.stack(), {p: False}).tolist() == [0.0, 5.0]
