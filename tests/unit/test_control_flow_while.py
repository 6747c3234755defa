"""tf.while_loop: values, structures, invariants, captures, variables updated inside,
nesting with loops and conds, gradients over run-time trip counts, back_prop=False."""
import collections

import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_counts_and_structure():
    n = tf.placeholder(tf.int32, [])
    Acc = collections.namedtuple("Acc", "total last")
    out = tf.while_loop(lambda i, acc: i < n,
                        lambda i, acc: (i + 1, Acc(acc.total + i, i)),
                        (tf.constant(0), Acc(tf.constant(0), tf.constant(-1))))
    assert isinstance(out, tuple) and isinstance(out[1], Acc)
    single = tf.while_loop(lambda i: i < n, lambda i: i + 2, [tf.constant(0)])
    same = tf.while_loop(lambda i: i < n, lambda i: [i + 2], [tf.constant(0)], return_same_structure=True)
    assert isinstance(single, tf.Tensor) and isinstance(same, list)
    with tf.Session() as s:
        got = s.run(out, {n: 5})
        assert got[0] == 5 and got[1].total == 10 and got[1].last == 4
        assert s.run(single, {n: 5}) == 6
        assert s.run(out, {n: 0})[1].last == -1


def test_dict_loop_vars_and_maximum_iterations():
    out = tf.while_loop(lambda d: d["i"] < 100, lambda d: [{"i": d["i"] + 1, "x": d["x"] * 2.0}],
                        [{"i": tf.constant(0), "x": tf.constant(1.0)}], maximum_iterations=5)
    with tf.Session() as s:
        got = s.run(out)[0]
        assert got["i"] == 5 and got["x"] == 32.0


def test_shape_invariants_and_errors():
    x = tf.constant([1])
    with pytest.raises(ValueError, match="enters the loop with shape"):
        tf.while_loop(lambda v: tf.size(v) < 5, lambda v: tf.concat([v, v], 0), [x])
    with pytest.raises(TypeError, match="type should remain constant"):
        tf.while_loop(lambda v: True, lambda v: tf.cast(v, tf.float32), [x])
    out = tf.while_loop(lambda v: tf.size(v) < 5, lambda v: tf.concat([v, v], 0), [x],
                        shape_invariants=[tf.TensorShape([None])])
    assert out.shape.as_list() == [None]
    with pytest.raises(TypeError, match="cond must be callable"):
        tf.while_loop(1, lambda v: v, [x])
    with tf.Session() as s:
        assert s.run(out).tolist() == [1] * 8


def test_loop_invariant_capture_and_variable_updated_inside():
    v = tf.Variable(0.0)
    scale = tf.placeholder(tf.float32, [])

    def body(i, acc):
        inc = tf.assign_add(v, 1.0)
        with tf.control_dependencies([inc]):
            return i + 1, acc + v.read_value() * scale

    out = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), tf.constant(0.0)])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out[1], {scale: 2.0}) == 2.0 * (1 + 2 + 3)
        assert s.run(v) == 3.0


def test_nested_loops_and_cond_inside_loop():
    n = tf.placeholder(tf.int32, [])

    def outer_body(i, total):
        inner = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t + j), [tf.constant(0), total])
        bonus = tf.cond(tf.equal(i % 2, 0), lambda: tf.constant(100), lambda: tf.constant(0))
        return i + 1, inner[1] + bonus

    out = tf.while_loop(lambda i, t: i < n, outer_body, [tf.constant(0), tf.constant(0)])
    with tf.Session() as s:
        want = sum(sum(range(i)) + (100 if i % 2 == 0 else 0) for i in range(4))
        assert s.run(out[1], {n: 4}) == want


def test_gradient_with_trip_count_fed_at_run_time():
    x = tf.placeholder(tf.float64, [2])
    n = tf.placeholder(tf.int32, [])
    _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * x), [tf.constant(0), tf.ones([2], tf.float64)])
    g = tf.gradients(y, x)[0]
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(g, {x: [2.0, 3.0], n: 3}), [12.0, 27.0])
        np.testing.assert_allclose(s.run(g, {x: [2.0, 3.0], n: 1}), [1.0, 1.0])
        np.testing.assert_allclose(s.run(g, {x: [2.0, 3.0], n: 0}), [0.0, 0.0])


def test_gradient_matches_finite_differences_through_loop_var_and_capture():
    def build(x, w):
        def body(i, h):
            return i + 1, tf.tanh(h * w + x)
        return tf.while_loop(lambda i, h: i < 4, body, [tf.constant(0), x])[1]

    check_gradient(build, [np.array([0.3, -0.2]), np.array([0.7, 1.1])])


def test_gradient_through_nested_loop_and_cond():
    def build(x):
        def body(i, h):
            inner = tf.while_loop(lambda j, a: j < 2, lambda j, a: (j + 1, a * h), [tf.constant(0), h])[1]
            return i + 1, tf.cond(tf.reduce_sum(inner) > 0.0, lambda: tf.sin(inner), lambda: inner * 3.0)
        return tf.while_loop(lambda i, h: i < 2, body, [tf.constant(0), x])[1]

    check_gradient(build, [np.array([0.5, -0.4])])


def test_optimizer_through_loop_over_variable():
    w = tf.Variable(2.0)
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w), [tf.constant(0), tf.constant(1.0)])
    train = tf.train.GradientDescentOptimizer(0.01).minimize(y)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(train)
        assert abs(s.run(w) - (2.0 - 0.01 * 12.0)) < 1e-6


def test_back_prop_false_gives_no_gradient():
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), [tf.constant(0), x], back_prop=False)[1]
    assert tf.gradients(y, x) == [None]
    with tf.Session() as s:
        assert s.run(y, {x: 3.0}) == 27.0


def test_get_variable_reused_inside_a_body():
    with tf.variable_scope("cell"):
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(2.0))

    def body(i, y):
        with tf.variable_scope("cell", reuse=True):
            return i + 1, y * tf.get_variable("w", [])

    y = tf.while_loop(lambda i, y: i < 3, body, [tf.constant(0), tf.constant(1.0)])[1]
    assert len(tf.global_variables()) == 1
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(y) == 8.0
        assert s.run(tf.gradients(y, w)[0]) == 12.0


def test_an_endless_loop_stops_at_the_run_timeout():
    out = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [tf.constant(0)], back_prop=False)
    with tf.Session() as s:
        with pytest.raises(tf.errors.DeadlineExceededError, match="deadline passed"):
            s.run(out, options=tf.RunOptions(timeout_in_ms=300))


def test_gradient_of_a_loop_inside_a_cond_and_a_cond_inside_a_map_fn():
    def build(x, w):
        looped = tf.cond(tf.reduce_sum(x) > -100.0,
                         lambda: tf.while_loop(lambda i, h: i < 3, lambda i, h: (i + 1, tf.sin(h * w)), [0, x])[1],
                         lambda: x)
        mapped = tf.map_fn(lambda r: tf.cond(r[0] > 0.0, lambda: r * w, lambda: r * r), tf.reshape(x, [1, 2]))
        return looped + tf.reshape(mapped, [2])

    check_gradient(build, [np.array([0.4, -0.3]), np.array([1.3, 0.6])])


def test_cond_sees_the_variable_the_body_updates():
    v = tf.Variable(0)

    def body(i):
        with tf.control_dependencies([tf.assign_add(v, 3)]):
            return i + 1

    out = tf.while_loop(lambda i: v.read_value() < 10, body, [tf.constant(0)])
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out) == 4 and s.run(v) == 12


def test_second_order_gradients_are_refused_by_name():
    x = tf.placeholder(tf.float32, [])
    y = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), [0, x])[1]
    c = tf.cond(x > 0.0, lambda: x * x, lambda: x)
    dy, dc = tf.gradients(y, x)[0], tf.gradients(c, x)[0]
    with pytest.raises(LookupError, match="second-order gradients through tf.while_loop"):
        tf.gradients(dy, x)
    with pytest.raises(LookupError, match="second-order gradients through tf.cond"):
        tf.gradients(dc, x)
