"""A plan folds stateless ops whose inputs are all constants into constants: they compute
once when the plan is built, never per step, with the same values and errors."""
import numpy as np
import pytest

import dtf as tf
from dtf.runtime import executor


def run_plan(sess):
    [plan] = list(sess._backend._executor._plans.values())
    return {st.node.name for st in plan.steps}


def test_ops_over_constants_run_once_and_give_the_same_values():
    g = tf.Graph()
    with g.as_default():
        shape = tf.concat([tf.constant([2]), tf.constant([3])], 0, name="shape")
        ones = tf.fill(shape, 1.5, name="ones")
        x = tf.placeholder(tf.float32, [2, 3], name="x")
        y = tf.add(x, tf.reshape(tf.range(6, dtype=tf.float32), shape, name="r"), name="y")
        out = tf.multiply(y, ones, name="out")
    with tf.Session(graph=g) as sess:
        for k in range(2):
            got = sess.run(out, {x: np.full((2, 3), k, np.float32)})
            np.testing.assert_array_equal(got, (k + np.arange(6).reshape(2, 3)) * 1.5)
        run = run_plan(sess)
    assert "out" in run  # it reads the feed
    assert not run & {"shape", "ones", "r"}  # folded


def test_a_stateful_op_over_constants_still_runs_every_step():
    g = tf.Graph()
    with g.as_default():
        draws = tf.random_uniform(tf.constant([4]), name="draws") * tf.constant(2.0)
    with tf.Session(graph=g) as sess:
        a, b = sess.run(draws), sess.run(draws)
        assert not np.array_equal(a, b)
        assert any(name.startswith("draws") for name in run_plan(sess))


def test_an_op_that_fails_on_constants_fails_in_the_step_naming_it():
    g = tf.Graph()
    with g.as_default():
        bad = tf.gather(tf.constant([1, 2, 3]), tf.constant(5), name="bad")
    with tf.Session(graph=g) as sess:
        for _ in range(2):
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
                sess.run(bad)


def test_a_large_value_is_not_kept_in_the_plan():
    g = tf.Graph()
    with g.as_default():
        n = executor.FOLD_MAX_BYTES // 4 + 1
        big = tf.fill(tf.constant([n]), tf.constant(1.0, tf.float32), name="big")
        small = tf.fill(tf.constant([4]), tf.constant(1.0, tf.float32), name="small")
    with tf.Session(graph=g) as sess:
        got_big, got_small = sess.run([big, small])
        assert got_big.shape == (n,) and got_small.tolist() == [1.0] * 4
        run = run_plan(sess)
    assert "big" in run and "small" not in run


def test_a_fed_tensor_is_never_folded_even_where_a_constant_feeds_it():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(3.0)
        doubled = tf.multiply(c, 2.0, name="doubled")
        out = tf.add(doubled, 1.0, name="out")
    with tf.Session(graph=g) as sess:
        assert sess.run(out) == 7.0
        assert sess.run(out, {doubled: 10.0}) == 11.0
