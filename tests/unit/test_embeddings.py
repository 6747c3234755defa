"""embedding_lookup over shards, partitioned variables and SparseTensors: placement,
errors and the rules TF's goldens do not reach."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def test_lookup_gathers_beside_each_shard():
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.zeros([3, 2], np.float32), name="a")
    with tf.device("/job:ps/task:1"):
        b = tf.Variable(np.zeros([3, 2], np.float32), name="b")
    with tf.device("/job:worker/task:0"):
        y = tf.nn.embedding_lookup([a, b], [0, 5])
    gathers = [op for op in tf.get_default_graph().get_operations() if op.type == "GatherV2"]
    assert sorted(op.device for op in gathers) == ["/job:ps/task:0", "/job:ps/task:1"]
    assert y.device == "/job:worker/task:0"


def test_lookup_rejects_unknown_strategy_and_empty_params():
    with pytest.raises(ValueError, match="Unrecognized partition strategy: modulo"):
        tf.nn.embedding_lookup([tf.zeros([2, 2]), tf.zeros([2, 2])], [0],
                               partition_strategy="modulo")
    with pytest.raises(ValueError, match="Need at least one param"):
        tf.nn.embedding_lookup([], [0])


def test_lookup_out_of_range_id_fails_at_run_time():
    y = tf.nn.embedding_lookup(tf.zeros([3, 2]), [3])
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="not in"):
        sess.run(y)


def test_div_lookup_with_unknown_shard_sizes_reads_them_at_run_time():
    p0 = tf.placeholder(tf.float32, [None, 2])
    p1 = tf.placeholder(tf.float32, [None, 2])
    y = tf.nn.embedding_lookup([p0, p1], [4, 0, 2], partition_strategy="div")
    table = np.arange(10, dtype=np.float32).reshape(5, 2)
    with tf.Session() as sess:
        got = sess.run(y, {p0: table[:3], p1: table[3:]})
    np.testing.assert_array_equal(got, table[[4, 0, 2]])


def test_lookup_gradient_against_finite_differences():
    check_gradient(lambda t: tf.nn.embedding_lookup([t[:2], t[2:]], [3, 0, 3]) * 2.0,
                   [np.random.RandomState(0).randn(4, 2)])
    check_gradient(lambda t: tf.nn.embedding_lookup(t, [[1, 2]], max_norm=0.5),
                   [np.random.RandomState(1).randn(3, 2)])


def test_partitioner_errors_are_tfs():
    with pytest.raises(ValueError, match="Can only slice a variable along one dimension"):
        tf.get_variable("two_axes", [4, 4], partitioner=lambda shape, dtype: [2, 2])
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("unknown", initializer=np.zeros([4, 2], np.float32),
                        partitioner=tf.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="max_shard_bytes is 0"):
        tf.variable_axis_size_partitioner(0)
    tf.get_variable("p", [6, 2], partitioner=tf.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="Partitioned variable with name p already exists"):
        tf.get_variable("p", [6, 2], partitioner=tf.fixed_size_partitioner(2))
    with tf.variable_scope("", reuse=True), \
            pytest.raises(ValueError, match="specified partitions \\[3, 1\\]"):
        tf.get_variable("p", [6, 2], partitioner=tf.fixed_size_partitioner(3))
    tf.get_variable("plain", [4])
    with pytest.raises(ValueError, match="unpartitioned version of the variable was found"):
        tf.get_variable("plain", [4], partitioner=tf.fixed_size_partitioner(2))


def test_replica_device_setter_spreads_shards_round_robin():
    setter = tf.train.replica_device_setter(ps_tasks=2)
    with tf.device(setter):
        emb = tf.get_variable("emb", [9, 2], partitioner=tf.fixed_size_partitioner(4))
    assert [v.device for v in emb] == ["/job:ps/task:0", "/job:ps/task:1",
                                       "/job:ps/task:0", "/job:ps/task:1"]
    assert [v.get_shape().as_list()[0] for v in emb] == [3, 2, 2, 2]


def test_partitioned_variable_converts_to_its_full_value():
    emb = tf.get_variable("emb", [5, 2], initializer=tf.ones_initializer(),
                          partitioner=tf.fixed_size_partitioner(2))
    y = tf.matmul(tf.ones([1, 5]), emb)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(y), [[5.0, 5.0]])


def test_saver_dict_entry_for_a_partitioned_variable(tmp_path):
    emb = tf.get_variable("emb", [5, 2], initializer=tf.ones_initializer(),
                          partitioner=tf.fixed_size_partitioner(2))
    saver = tf.train.Saver({"table": emb})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "ckpt"))
    assert tf.train.list_variables(path) == [("table", [5, 2])]


def test_sparse_to_dense_errors_name_the_index():
    def dense(indices):
        return tf.sparse_to_dense(indices, [3, 3], [1.0, 2.0])

    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1\] = \[0,1\] is out of order"):
            sess.run(dense([[1, 0], [0, 1]]))
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1\] = \[1,0\] is repeated"):
            sess.run(dense([[1, 0], [1, 0]]))
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
            sess.run(dense([[1, 0], [3, 0]]))
    check_against_reference(tf.sparse_to_dense([[0, 2], [1, 1]], [2, 3], [4.0, 5.0], 0.5))


def test_sparse_placeholder_fed_and_fetched():
    sp = tf.sparse_placeholder(tf.float32)
    doubled = tf.SparseTensor(sp.indices, sp.values * 2.0, sp.dense_shape)
    value = tf.SparseTensorValue(np.array([[0, 1]]), np.array([3.0], np.float32), np.array([2, 2]))
    with tf.Session() as sess:
        got = sess.run(doubled, {sp: value})
    assert isinstance(got, tf.SparseTensorValue)
    np.testing.assert_array_equal(got.values, [6.0])
    with pytest.raises(TypeError, match="sp_ids must be SparseTensor"):
        tf.nn.embedding_lookup_sparse(tf.zeros([3, 2]), [0, 1], None)
    with pytest.raises(ValueError, match="combiner must be one of"):
        tf.nn.embedding_lookup_sparse(tf.zeros([3, 2]), sp, None, combiner="max")


def test_sync_replicas_aggregates_sparse_gradients_sparsely():
    emb = tf.Variable(np.zeros([6, 2], np.float32), name="emb")
    gs = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=1, total_num_replicas=1)
    grads = opt.compute_gradients(tf.reduce_sum(tf.nn.embedding_lookup(emb, [1, 4])))
    assert isinstance(grads[0][0], tf.IndexedSlices)
    opt.apply_gradients(grads, global_step=gs)
    ops = tf.get_default_graph().get_operations()
    assert not [op for op in ops if op.type == "AccumulatorApplyGradient"]
    applies = [op for op in ops if op.type == "SparseAccumulatorApplyGradient"]
    # inputs: handle, local_step, indices, values (the two looked-up rows), dense shape
    assert applies and applies[0].inputs[3].shape.as_list() == [2, 2]


@pytest.mark.parametrize("fn", [tf.nn.uniform_candidate_sampler,
                                tf.nn.log_uniform_candidate_sampler])
def test_candidate_samplers_draw_in_range_distinct_and_seeded(fn):
    true = np.array([[1], [4]], np.int64)
    sampled, true_expected, sampled_expected = fn(true, 1, 6, True, 8, seed=3)
    with tf.Session() as sess:
        first = sess.run([sampled, true_expected, sampled_expected])
        second = sess.run(sampled)
    with tf.Session() as sess:
        again = sess.run(sampled)
    s, te, se = first
    assert s.dtype == np.int64 and len(set(s.tolist())) == 6 and ((0 <= s) & (s < 8)).all()
    assert (te > 0).all() and (te <= 1).all() and (se > 0).all() and (se <= 1).all()
    np.testing.assert_array_equal(s, again)  # same seed, new session: same draws
    assert second.shape == (6,)
    check_against_reference(sampled)


def test_sampler_refuses_a_true_class_out_of_range():
    s, _, _ = tf.nn.uniform_candidate_sampler([[12]], 1, 2, False, 10)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="out of range \\[0, 10\\), received 12"):
        sess.run(s)


def test_nce_and_sampled_softmax_gradients_against_finite_differences():
    rng = np.random.RandomState(0)
    labels = np.array([[1], [3]], np.int64)
    sampled = (tf.constant([0, 2, 3], tf.int64), tf.constant([[0.3], [0.2]]),
               tf.constant([0.5, 0.25, 0.2]))

    def loss(w, x, which):
        values = tuple(tf.cast(v, tf.float64) if v.dtype == tf.float32 else v for v in sampled)
        return which(w, tf.zeros([5], tf.float64), labels, x, 3, 5, sampled_values=values)

    for which in (tf.nn.nce_loss, tf.nn.sampled_softmax_loss):
        check_gradient(lambda w, x: loss(w, x, which), [rng.randn(5, 3), rng.randn(2, 3)])


def test_greedy_load_balancing_spreads_shards_by_bytes():
    strategy = tf.train.GreedyLoadBalancingStrategy(2, tf.train.byte_size_load_fn)
    with tf.device(tf.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        big = tf.get_variable("big", [100, 8])
        emb = tf.get_variable("emb", [40, 8], partitioner=tf.fixed_size_partitioner(4))
    assert big.device == "/job:ps/task:0"
    # Every 10x8 shard goes to the lighter task: task 1 until it catches up with task 0.
    assert [v.device for v in emb] == ["/job:ps/task:1"] * 4


def test_sparse_reorder_kernel_gradient_and_matmul_gradient():
    indices = np.array([[1, 0], [0, 2], [0, 1]], np.int64)
    weights = np.array([1.0, 2.0, 3.0])
    ordered = tf.sparse.reorder(tf.SparseTensor(indices, tf.constant([4.0, 5.0, 6.0]), [2, 3]))
    check_against_reference(ordered.values)
    check_gradient(lambda v: tf.sparse.reorder(tf.SparseTensor(indices, v, [2, 3])).values
                   * weights, [np.array([0.5, -1.0, 2.0])])
    check_gradient(lambda b: tf.sparse_tensor_dense_matmul(
        tf.SparseTensor(indices, np.array([1.5, -2.0, 0.5]), [2, 3]), b),
        [np.random.RandomState(2).randn(3, 2)])
    with pytest.raises(ValueError, match="to_retain must be a vector"):
        tf.sparse.retain(ordered, [[True]])
