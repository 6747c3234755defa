"""tf.cond, tf.case, tf.switch_case: values, only-the-taken-branch side effects, nesting,
captures, structures, gradients (finite differences) and errors."""
import collections

import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_cond_picks_branch_by_fed_predicate():
    x = tf.placeholder(tf.float32, [3])
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
    assert out.shape.as_list() == [3]
    with tf.Session() as s:
        np.testing.assert_allclose(s.run(out, {x: [1, 2, 3], p: True}), [2, 4, 6])
        np.testing.assert_allclose(s.run(out, {x: [1, 2, 3], p: False}), [0, 1, 2])


def test_old_argument_names_and_errors():
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, fn1=lambda: tf.constant(1), fn2=lambda: tf.constant(2))
    with tf.Session() as s:
        assert s.run(out, {p: False}) == 2
    with pytest.raises(TypeError, match="true_fn and fn1"):
        tf.cond(p, lambda: 1, fn1=lambda: 1, false_fn=lambda: 2)
    with pytest.raises(TypeError, match="true_fn must be callable"):
        tf.cond(p, 1, lambda: 2)
    with pytest.raises(TypeError, match="Python bool"):
        tf.cond(True, lambda: 1, lambda: 2)
    with pytest.raises(ValueError, match="same type"):
        tf.cond(p, lambda: tf.constant(1), lambda: tf.constant(1.0))
    with pytest.raises(ValueError, match="same nested structure"):
        tf.cond(p, lambda: (tf.constant(1), tf.constant(2)), lambda: tf.constant(1))


def test_only_taken_branch_updates_variables():
    v = tf.Variable(0.0)
    w = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])

    def true_fn():
        return tf.assign_add(v, 1.0)

    def false_fn():
        return tf.assign_add(w, 10.0)

    out = tf.cond(p, true_fn, false_fn)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out, {p: True}) == 1.0
        assert s.run(out, {p: True}) == 2.0
        assert s.run(out, {p: False}) == 10.0
        assert s.run([v, w]) == [2.0, 10.0]


def test_control_dependencies_inside_branch_and_unconnected_ops_pruned():
    v = tf.Variable(0.0)
    u = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])

    def true_fn():
        tf.assign_add(u, 100.0)  # not a dependency of the output: TF 1.x never runs it
        inc = tf.assign_add(v, 1.0)
        with tf.control_dependencies([inc]):
            return tf.constant(5.0)

    out = tf.cond(p, true_fn, lambda: tf.constant(-1.0))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out, {p: True}) == 5.0
        assert s.run(out, {p: False}) == -1.0
        assert s.run([v, u]) == [1.0, 0.0]


def test_variable_read_inside_branch_sees_update_before_it():
    v = tf.Variable(3.0)
    p = tf.placeholder(tf.bool, [])

    def true_fn():
        a = tf.assign(v, 7.0)
        with tf.control_dependencies([a]):
            return v.read_value() * 2.0

    out = tf.cond(p, true_fn, lambda: v.read_value())
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out, {p: False}) == 3.0
        assert s.run(out, {p: True}) == 14.0


def test_outer_control_dependency_runs_before_the_cond():
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 1.0)
    p = tf.placeholder(tf.bool, [])

    def true_fn():
        with tf.control_dependencies([inc]):
            return tf.identity(tf.constant(0.0))

    out = tf.cond(p, true_fn, lambda: tf.constant(1.0))
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(out, {p: True})
        assert s.run(v) == 2.0


def test_nested_structures_and_singletons():
    p = tf.placeholder(tf.bool, [])
    Pair = collections.namedtuple("Pair", "a b")
    out = tf.cond(p, lambda: {"x": Pair(tf.constant(1), tf.constant(2.0)), "y": [tf.constant(3)]},
                  lambda: {"x": Pair(tf.constant(4), tf.constant(5.0)), "y": [tf.constant(6)]})
    assert isinstance(out["x"], Pair) and isinstance(out["y"], list)
    single = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)])
    strict = tf.cond(p, lambda: [tf.constant(1)], lambda: [tf.constant(2)], strict=True)
    assert isinstance(strict, list) and not isinstance(single, list)
    with tf.Session() as s:
        got = s.run(out, {p: False})
        assert got["x"].a == 4 and got["x"].b == 5.0 and got["y"] == [6]
        assert s.run(single, {p: True}) == 1


def test_nested_cond_and_captures_from_two_levels_up():
    x = tf.placeholder(tf.float32, [])
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: tf.cond(q, lambda: x + 1.0, lambda: x + 2.0), lambda: x * 10.0)
    g = tf.gradients(out * out, x)[0]
    with tf.Session() as s:
        for pv, qv, want, dwant in [(True, True, 4.0, 8.0), (True, False, 5.0, 10.0),
                                    (False, True, 30.0, 600.0)]:
            assert s.run([out, g], {x: 3.0, p: pv, q: qv}) == [want, dwant]


def test_branch_returning_an_operation():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])
    op = tf.cond(p, lambda: tf.group(tf.assign_add(v, 1.0)), lambda: tf.no_op())
    assert isinstance(op, tf.Operation)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(op, {p: True})
        s.run(op, {p: False})
        assert s.run(v) == 1.0


@pytest.mark.parametrize("take", [True, False])
def test_cond_gradient_matches_finite_differences(take):
    def build(x, y):
        return tf.cond(tf.constant(take), lambda: tf.sin(x) * y, lambda: tf.exp(x) + y * y)

    check_gradient(build, [np.array([0.3, -0.7]), np.array([1.5, 2.0])])


def test_cond_gradient_through_nested_cond_and_unused_input():
    def build(x, y):
        inner = lambda: tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * x, lambda: -x)  # noqa: E731
        return tf.cond(tf.constant(True), inner, lambda: y)

    check_gradient(build, [np.array([0.3, 0.2]), np.array([1.5, 2.0])])


def test_optimizer_through_cond():
    w = tf.Variable([1.0, 2.0])
    p = tf.placeholder(tf.bool, [])
    loss = tf.cond(p, lambda: tf.reduce_sum(w * w), lambda: tf.reduce_sum(3.0 * w))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        s.run(train, {p: True})
        np.testing.assert_allclose(s.run(w), [0.8, 1.6], rtol=1e-6)
        s.run(train, {p: False})
        np.testing.assert_allclose(s.run(w), [0.5, 1.3], rtol=1e-6)


def test_case_first_true_and_default():
    x = tf.placeholder(tf.int32, [])
    out = tf.case([(tf.equal(x, 1), lambda: tf.constant(10)), (tf.equal(x, 2), lambda: tf.constant(20))],
                  default=lambda: tf.constant(-1))
    with tf.Session() as s:
        assert [s.run(out, {x: v}) for v in (1, 2, 3)] == [10, 20, -1]


def test_case_exclusive_and_no_default_check_at_run_time():
    x = tf.placeholder(tf.int32, [])
    pairs = [(tf.less(x, 5), lambda: tf.constant(1)), (tf.less(x, 10), lambda: tf.constant(2))]
    excl = tf.case(pairs, default=lambda: tf.constant(0), exclusive=True)
    last = tf.case(pairs)
    with tf.Session() as s:
        assert s.run(excl, {x: 7}) == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="more than 1 conditions"):
            s.run(excl, {x: 1})
        assert s.run(last, {x: 7}) == 2
        with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions"):
            s.run(last, {x: 20})


def test_switch_case_and_out_of_range_default():
    i = tf.placeholder(tf.int32, [])
    out = tf.switch_case(i, [lambda: tf.constant(0.5), lambda: tf.constant(1.5), lambda: tf.constant(2.5)])
    dflt = tf.switch_case(i, {0: lambda: tf.constant(7), 1: lambda: tf.constant(8)},
                          default=lambda: tf.constant(9))
    with tf.Session() as s:
        assert [s.run(out, {i: k}) for k in (0, 1, 2, 5)] == [0.5, 1.5, 2.5, 2.5]
        assert [s.run(dflt, {i: k}) for k in (0, 1, -1)] == [7, 8, 9]


def test_variables_made_inside_bodies_are_lifted_out_and_named_by_variable_scope():
    p = tf.placeholder(tf.bool, [])
    with tf.device("/cpu:0"):
        out = tf.cond(p, lambda: tf.get_variable("w", [2], initializer=tf.ones_initializer()) * 2.0,
                      lambda: tf.zeros([2]))

    def body(i, acc):
        with tf.variable_scope("cell", reuse=tf.AUTO_REUSE):
            k = tf.get_variable("k", [], initializer=tf.constant_initializer(3.0))
        return i + 1, acc * k

    loop = tf.while_loop(lambda i, acc: i < 2, body, [tf.constant(0), tf.constant(1.0)])[1]
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["cell/k", "w"]
    assert tf.global_variables()[0].device == "/device:CPU:0"  # the scope around the cond
    assert tf.gradients(loop, tf.global_variables()[1])[0] is not None
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out, {p: True}).tolist() == [2.0, 2.0]
        assert s.run(loop) == 9.0
    with pytest.raises(ValueError, match="use a lambda as the initializer"):
        tf.cond(p, lambda: tf.Variable(tf.constant(1.0)).read_value(), lambda: tf.constant(0.0))


def test_predicate_read_from_a_bool_variable():
    flag = tf.Variable(True)
    out = tf.cond(flag, lambda: tf.constant(1), lambda: tf.constant(2))
    flip = tf.assign(flag, False)
    with tf.Session() as s:
        s.run(tf.global_variables_initializer())
        assert s.run(out) == 1
        s.run(flip)
        assert s.run(out) == 2
