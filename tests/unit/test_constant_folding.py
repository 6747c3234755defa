"""A plan folds stateless ops whose inputs are all constants into constants: they compute
once when the plan is built, never per step, with the same values and errors."""
import numpy as np
import pytest

import dtf as tf
from dtf.runtime import constant_folding


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
        n = constant_folding.FOLD_MAX_BYTES // 4 + 1
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


def plan_of(sess, fetches):
    """The plan a run of ``fetches`` (its target ops) built, by the names of its steps' nodes."""
    names = {getattr(f, "name", None) for f in fetches}
    for plan in sess._backend._executor._plans.values():
        ops = {st.node.name: st for st in plan.steps}
        if names <= set(ops):
            return ops
    raise AssertionError(f"no plan runs {names}")


@pytest.mark.parametrize("as_target", [False, True])
def test_a_segment_sum_gradient_with_constant_ids_runs_the_gather_alone(as_target):
    # TF's gradient selects the gathered rows where ids >= 0 against zeros: with constant
    # ids the mask is all true, and the mask, the zeros and the select need not run.
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, 600)
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [600, 64])
        dy = tf.Variable(rng.standard_normal((50, 64)).astype(np.float32))
        [grad] = tf.gradients(tf.math.unsorted_segment_sum(x, tf.constant(ids), 50), [x], grad_ys=dy)
    with tf.Session(graph=g) as sess:
        sess.run(tf.variables_initializer([dy]))
        fetch = grad.op if as_target else grad
        for _ in range(2):
            sess.run(fetch)
        np.testing.assert_array_equal(sess.run(grad), sess.run(dy)[ids])
        steps = plan_of(sess, [grad.op])
    ops = {st.node.op for st in steps.values()}
    assert "LogicalAnd" not in ops and "Fill" not in ops, ops
    select = steps[grad.op.name]
    assert len(select.ins) == 1  # it reads the gathered rows alone


def test_an_all_false_condition_picks_the_else_branch():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [200, 100])
        out = tf.where_v2(tf.zeros([200, 100], tf.bool), tf.ones([200, 100]), x, name="out")
    with tf.Session(graph=g) as sess:
        xv = np.arange(20000, dtype=np.float32).reshape(200, 100)
        np.testing.assert_array_equal(sess.run(out, {x: xv}), xv)
        assert len(plan_of(sess, [out.op])["out"].ins) == 1


def test_a_picked_branch_is_still_broadcast_to_the_output_shape():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None])
        out = tf.where_v2(tf.ones([200, 100], tf.bool), x, tf.zeros([200, 100]), name="out")
    with tf.Session(graph=g) as sess:
        xv = np.arange(100, dtype=np.float32)
        np.testing.assert_array_equal(sess.run(out, {x: xv}), np.broadcast_to(xv, (200, 100)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="out"):
            sess.run(out, {x: np.arange(7, dtype=np.float32)})


def test_a_select_with_a_mixed_condition_reads_all_its_inputs():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [200, 100])
        cond = tf.constant(np.arange(20000).reshape(200, 100) % 3 == 0)
        out = tf.where_v2(cond, x, tf.zeros([200, 100]), name="out")
    with tf.Session(graph=g) as sess:
        xv = np.ones((200, 100), np.float32)
        np.testing.assert_array_equal(sess.run(out, {x: xv}), np.where(sess.run(cond), xv, 0))
        assert len(plan_of(sess, [out.op])["out"].ins) == 3


def test_a_target_is_never_dropped_though_nothing_reads_it_any_more():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [200, 100])
        zeros = tf.zeros([200, 100], name="zeros")
        out = tf.where_v2(tf.ones([200, 100], tf.bool), x, zeros, name="out")
    with tf.Session(graph=g) as sess:
        sess.run([out.op, zeros.op], {x: np.ones((200, 100), np.float32)})
        assert "zeros" in plan_of(sess, [out.op, zeros.op])
