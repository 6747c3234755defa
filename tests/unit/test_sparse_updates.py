"""IndexedSlices gradients, scatter ops and sparse optimizer updates: kernels against the
numpy reference, finite-difference gradients, and which rows an update changes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dtf as tf
from dtf.kernels.reference import REFERENCE
from tests.opcheck import check_against_reference, check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def _table(rows=8, dim=3, seed=0):
    return np.random.RandomState(seed).randn(rows, dim).astype(np.float32)


def test_gather_gradient_is_indexed_slices_with_rows_only():
    params = tf.Variable(_table(), name="emb")
    g, = tf.gradients(tf.reduce_sum(tf.gather(params, [5, 1, 5]) * 2.0), [params])
    assert isinstance(g, tf.IndexedSlices)
    assert g.values.shape.as_list() == [3, 3] and g.get_shape().as_list() == [8, 3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(g)
    assert isinstance(got, tf.IndexedSlicesValue)
    np.testing.assert_array_equal(got.indices, [5, 1, 5])
    np.testing.assert_array_equal(got.values, np.full([3, 3], 2.0))
    np.testing.assert_array_equal(got.dense_shape, [8, 3])


def test_densifying_unknown_shape_warns_as_tf():
    p = tf.placeholder(tf.float32, [None, 2])
    g, = tf.gradients(tf.gather(p, [0]), [p])
    with pytest.warns(UserWarning, match="Converting sparse IndexedSlices to a dense Tensor "
                                         "of unknown shape"):
        dense = tf.convert_to_tensor(g)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(dense, {p: np.zeros([3, 2])}),
                                      [[1, 1], [0, 0], [0, 0]])
    known = tf.placeholder(tf.float32, [3, 2])
    g2, = tf.gradients(tf.gather(known, [0]), [known])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tf.convert_to_tensor(g2)


def test_indexed_slices_without_dense_shape_cannot_densify():
    s = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]))
    with pytest.raises(ValueError, match="without dense_shape"):
        tf.convert_to_tensor(s)


def test_gather_gradients_sum_against_finite_differences():
    ids = np.array([2, 0, 2, 3])
    check_gradient(lambda p: tf.gather(p, ids) ** 2, [np.random.RandomState(1).randn(4, 2)])
    check_gradient(lambda p: tf.gather(p, [[1, 1], [0, 2]]) * tf.gather(p, [2]),
                   [np.random.RandomState(2).randn(3, 2)])


def test_stitch_and_partition_gradients_and_kernels():
    data = np.random.RandomState(3).randn(5, 2)
    parts = [1, 0, 1, 1, 0]

    def build(d):
        p = tf.dynamic_partition(d, parts, 2)
        return tf.dynamic_stitch([[0, 1], [2, 3, 4]], [p[0] * 3.0, p[1] * p[1]])

    check_gradient(build, [data])
    check_against_reference(tf.dynamic_stitch([[2, 0], [1]], [data[:2], data[2:3]]))
    y, idx = tf.unique([5, 3, 5, 1])
    check_against_reference(y)
    check_against_reference(idx)


def _run_update(build, init):
    v = tf.Variable(init)
    out = build(v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run(out)
        return sess.run(v)


@pytest.mark.parametrize("fn", ["scatter_update", "scatter_add", "scatter_sub", "scatter_mul",
                                "scatter_div", "scatter_min", "scatter_max"])
def test_scatter_ops_touch_only_named_rows_and_match_reference(fn):
    init = _table(6, 2) + 3.0
    upd = _table(3, 2, seed=4) + 1.0
    got = _run_update(lambda v: getattr(tf, fn)(v, [4, 1, 4], upd), init)
    op_type = "Scatter" + fn.split("_")[1].capitalize()
    want = REFERENCE[op_type]({}, init, np.array([4, 1, 4]), upd)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    untouched = [0, 2, 3, 5]
    np.testing.assert_array_equal(got[untouched], init[untouched])


def test_scatter_errors_name_the_bad_index_and_shapes():
    v = tf.Variable(np.zeros([3, 2], np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1\] = 7 is not in \[0, 3\)"):
            sess.run(tf.scatter_add(v, [0, 7], np.ones([2, 2], np.float32)))
        with pytest.raises(tf.errors.InvalidArgumentError, match="updates.shape = indices.shape"):
            sess.run(tf.scatter_add(v, tf.placeholder_with_default([0, 1], [None]),
                                    tf.placeholder_with_default(np.ones([3, 2], np.float32),
                                                                [None, 2])))
    with pytest.raises(ValueError, match="updates.shape = indices.shape"):
        tf.scatter_update(v, [0], np.ones([2, 2], np.float32))


def test_scatter_does_not_change_a_value_fetched_before():
    v = tf.Variable(np.zeros([4, 2], np.float32))
    add = tf.scatter_add(v, [1], [[1.0, 1.0]])
    with tf.Session() as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        sess.run(add)
        after = sess.run(v)
    np.testing.assert_array_equal(before, np.zeros([4, 2]))
    np.testing.assert_array_equal(after[1], [1.0, 1.0])


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.GradientDescentOptimizer(0.1),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    lambda: tf.train.AdagradOptimizer(0.1),
    lambda: tf.train.RMSPropOptimizer(0.1),
    lambda: tf.train.FtrlOptimizer(0.1),
    lambda: tf.train.ProximalAdagradOptimizer(0.1),
], ids=["sgd", "momentum", "adagrad", "rmsprop", "ftrl", "proximal_adagrad"])
def test_sparse_optimizers_change_only_touched_rows(make_opt):
    init = _table(10, 4)
    params = tf.Variable(init, name="emb")
    ids = tf.placeholder(tf.int32, [None])
    loss = tf.reduce_sum(tf.gather(params, ids) ** 2)
    opt = make_opt()
    train = opt.minimize(loss)
    update_types = {op.type for op in tf.get_default_graph().get_operations()
                    if "update_emb" in op.name}
    assert not update_types & {"ApplyMomentum", "ApplyAdagrad", "ApplyRMSProp", "ApplyFtrl",
                               "ApplyGradientDescent"}, update_types
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in ([2, 7, 2], [7]):
            sess.run(train, {ids: batch})
        got = sess.run(params)
    changed = np.flatnonzero(np.any(got != init, axis=1))
    assert changed.tolist() == [2, 7]


def test_sparse_adam_is_non_lazy_like_tf():
    init = _table(5, 2)
    params = tf.Variable(init, name="emb")
    train = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(tf.gather(params, [1]) ** 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        once = sess.run(params)
        sess.run(train)
        twice = sess.run(params)
    # Step 1 moves row 1 only (m is zero elsewhere); from step 2 m's decay moves no row
    # with a zero moment, but row 1 keeps moving.
    assert np.flatnonzero(np.any(once != init, axis=1)).tolist() == [1]
    assert np.any(twice[1] != once[1])


def test_sparse_apply_with_repeated_indices_updates_row_by_row():
    var = np.ones([3, 2], np.float32)
    accum = np.full([3, 2], 0.1, np.float32)
    grad = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    new_var, new_accum = REFERENCE["SparseApplyAdagrad"](
        {}, var, accum, np.float32(0.5), grad, np.array([1, 1]))
    a1 = 0.1 + grad[0] ** 2
    v1 = 1.0 - 0.5 * grad[0] / np.sqrt(a1)
    a2 = a1 + grad[1] ** 2
    v2 = v1 - 0.5 * grad[1] / np.sqrt(a2)
    np.testing.assert_allclose(new_var[1], v2, rtol=1e-6)
    np.testing.assert_allclose(new_accum[1], a2, rtol=1e-6)
    np.testing.assert_array_equal(new_var[[0, 2]], 1.0)


def test_sparse_kernel_matches_reference():
    init = _table(6, 2)
    v = tf.Variable(init)
    m = tf.Variable(np.zeros_like(init))
    grad = tf.IndexedSlices(tf.constant(_table(2, 2, seed=9)), tf.constant([4, 0]),
                            tf.constant([6, 2]))
    from dtf.ops import state_ops

    upd = state_ops.apply_momentum(v, m, 0.1, grad, 0.5)
    assert upd.op.type == "SparseApplyMomentum"
    with tf.Session() as sess:
        sess.run([v.initializer, m.initializer])
        got = sess.run(upd)
    want = REFERENCE["SparseApplyMomentum"]({}, init, np.zeros_like(init), np.float32(0.1),
                                            _table(2, 2, seed=9), np.array([4, 0]),
                                            np.float32(0.5))
    np.testing.assert_allclose(got, want[0], rtol=1e-6)


def test_scatter_nd_kernels_match_reference_and_name_bad_indices():
    init = _table(4, 2)
    idx = np.array([[2], [0], [2]])
    upd = _table(3, 2, seed=5)
    got = _run_update(lambda v: tf.scatter_nd_add(v, idx, upd), init)
    np.testing.assert_allclose(got, REFERENCE["ScatterNdAdd"]({}, init, idx, upd), rtol=1e-6)
    np.testing.assert_array_equal(got[[1, 3]], init[[1, 3]])
    v = tf.Variable(init)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[0\] = \[4\] does not index into param shape \[4,2\]"):
            sess.run(tf.scatter_nd_update(v, [[4]], np.ones([1, 2], np.float32)))
    with pytest.raises(ValueError, match="updates.shape = indices.shape"):
        tf.scatter_nd_update(v, [[1]], np.ones([2, 2], np.float32))


def test_sparse_training_never_changes_values_fetched_earlier():
    init = _table(6, 2)
    params = tf.Variable(init, name="emb")
    rows = tf.gather(params, [1, 4])
    train = tf.train.AdagradOptimizer(0.5).minimize(tf.reduce_sum(rows ** 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        held = sess.run(params)
        fetched_rows, _ = sess.run([rows, train])
        after_one = sess.run(params)
        for _ in range(3):
            sess.run(train)
        final = sess.run(params)
    np.testing.assert_array_equal(held, init)
    np.testing.assert_array_equal(fetched_rows, init[[1, 4]])
    assert np.any(after_one[1] != init[1]) and np.any(final[1] != after_one[1])
    np.testing.assert_array_equal(final[[0, 2, 3, 5]], init[[0, 2, 3, 5]])


def test_lazy_adam_moves_only_touched_rows_with_adams_step():
    init = _table(6, 2)
    params = tf.Variable(init, name="emb")
    ids = tf.placeholder(tf.int32, [None])
    opt = tf.contrib.opt.LazyAdamOptimizer(0.1)
    train = opt.minimize(tf.reduce_sum(tf.gather(params, ids) ** 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: [1, 1, 4]})
        sess.run(train, {ids: [4]})
        got, m = sess.run([params, opt.get_slot(params, "m")])
    # numpy Adam on the touched rows only; duplicate ids summed first.
    want = init.astype(np.float64)
    mm, vv = np.zeros_like(want), np.zeros_like(want)
    for t, (rows, counts) in enumerate((([1, 4], [2, 1]), ([4], [1])), start=1):
        g = 2 * want[rows] * np.array(counts)[:, None]
        mm[rows] = 0.9 * mm[rows] + 0.1 * g
        vv[rows] = 0.999 * vv[rows] + 0.001 * g * g
        lr = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        want[rows] -= lr * mm[rows] / (np.sqrt(vv[rows]) + 1e-8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m, mm, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(got[[0, 2, 3, 5]], init[[0, 2, 3, 5]])


def test_variable_scatter_methods_take_indexed_slices():
    v = tf.Variable(np.zeros([4, 2], np.float32))
    delta = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([2]))
    ops = [v.scatter_add(delta), v.scatter_sub(delta), v.scatter_update(delta)]
    with tf.Session() as sess:
        sess.run(v.initializer)
        got = [sess.run(op).copy() for op in ops]
    np.testing.assert_array_equal(got[0][2], [1.0, 2.0])
    np.testing.assert_array_equal(got[1][2], [0.0, 0.0])
    np.testing.assert_array_equal(got[2][2], [1.0, 2.0])
    assert tf.convert_to_tensor_or_indexed_slices(delta) is delta
    with pytest.raises(TypeError, match="sparse_delta is not IndexedSlices"):
        v.scatter_add(tf.constant([1.0]))


def test_sparse_step_updates_the_table_in_place_when_nothing_else_holds_it():
    # The step's own lookup reads the table; no slot keeps it, so the update needs no copy.
    params = tf.Variable(_table(50, 4), name="emb")
    ids = tf.placeholder(tf.int32, [None])
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(
        tf.reduce_sum(tf.gather(params, ids) ** 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        resource = sess._backend._state.resources.variable("", "emb", None, None)
        sess.run(train, {ids: [3, 7]})
        first = id(resource.value)
        for _ in range(3):
            sess.run(train, {ids: [3, 9]})
        assert id(resource.value) == first
        held = sess.run(params)  # now a reader holds it: the next update must copy
        before = held.copy()
        sess.run(train, {ids: [3]})
        assert id(resource.value) != first
        np.testing.assert_array_equal(held, before)


def test_a_parked_step_holding_no_table_lets_another_steps_update_work_in_place():
    # Two workers' steps on a ps interleave: one has updated the table and waits (here on
    # a queue); the other's update must not copy the table because of it. The update's
    # output (the whole table) feeds nothing but a control edge, so no slot keeps it.
    from dtf.framework.graph_def import node_def_of
    from dtf.runtime.executor import ExecState, Executor, StepContext
    from dtf.runtime.rendezvous import StepRendezvous

    device = "/job:localhost/replica:0/task:0/device:CPU:0"
    g = tf.Graph()
    with g.as_default():
        table = tf.Variable(_table(1000, 8), name="table")
        update = tf.scatter_sub(table, [1, 5], np.ones((2, 8), np.float32))
        q = tf.FIFOQueue(2, tf.float32, shapes=[[]], shared_name="q")
        with tf.control_dependencies([update]):
            after = q.dequeue()
        enqueue = q.enqueue([1.0])
    executor = Executor("CPU", device)
    executor.add_nodes([node_def_of(op) for op in g.get_operations()])
    state = ExecState()

    def context(sid):
        return StepContext(state, sid, StepRendezvous(sid), None, device)

    executor.plan((), (), (table.initializer.name,)).run(context(1), [])
    resource = state.resources.variable("", "table", None, None)
    # The first update copies: the initial value is also the initializer constant's.
    executor.plan((), (), (update.op.name,)).run(context(2), [])
    first = id(resource.value)
    parked = executor.plan((after.name,), (), ()).start(context(3), [])
    assert parked.advance(on_ready=lambda: None) is False  # updated, now waiting
    executor.plan((), (), (update.op.name,)).run(context(4), [])
    assert id(resource.value) == first
    executor.plan((), (), (enqueue.name,)).run(context(5), [])
    assert parked.advance(on_ready=lambda: None) is True
    want = _table(1000, 8)
    for _ in range(3):
        want[[1, 5]] -= 1
    np.testing.assert_array_equal(resource.value, want)
