"""Embeddings: IndexedSlices gradients of gathers, their aggregation and clipping, sparse
optimizer updates from fixed inits, scatter ops, embedding_lookup over shards and
partitioned variables."""
import numpy as np

from tests.goldens.harness import case


def _table(seed=0, rows=10, dim=3):
    return np.random.RandomState(seed).randn(rows, dim).astype(np.float32)


IDS = np.array([3, 1, 3, 7, 0], dtype=np.int32)


@case
def gather_gradient_is_indexed_slices(tf):
    params = tf.Variable(_table(), name="params")
    w = np.random.RandomState(1).randn(5, 3).astype(np.float32)
    loss = tf.reduce_sum(tf.gather(params, IDS) * w)
    g, = tf.gradients(loss, [params])
    two, = tf.gradients(loss + tf.reduce_sum(tf.gather(params, [2, 3]) ** 2), [params])
    mixed, = tf.gradients(loss + tf.reduce_sum(params * params), [params])
    fetches = {"values": g.values, "indices": g.indices, "dense_shape": g.dense_shape,
               "dense": tf.convert_to_tensor(g), "two_values": two.values,
               "two_indices": two.indices, "two_dense": tf.convert_to_tensor(two), "mixed": mixed}
    kinds = {"sparse": _is_slices(tf, g), "two_sparse": _is_slices(tf, two),
             "mixed_sparse": _is_slices(tf, mixed), "values_shape": str(g.values.shape)}
    return lambda sess: {**sess.run(fetches), **kinds}


def _is_slices(tf, g):
    return isinstance(g, tf.IndexedSlices)


@case
def gather_3d_and_nested_ids_gradient(tf):
    params = tf.Variable(np.random.RandomState(2).randn(6, 2, 3), name="p3")
    ids = tf.constant(np.array([[0, 5], [5, 2]], dtype=np.int64))
    y = tf.gather(params, ids)
    g, = tf.gradients(tf.reduce_sum(y * y), [params])
    return {"y": y, "values": g.values, "indices": g.indices, "dense": tf.convert_to_tensor(g)}


@case
def clip_indexed_slices(tf):
    params = tf.Variable(_table(3), name="params")
    other = tf.Variable(np.ones([2, 2], np.float32), name="other")
    loss = tf.reduce_sum(tf.gather(params, IDS) * 3.0) + tf.reduce_sum(other * 2.0)
    g, h = tf.gradients(loss, [params, other])
    (cg, ch), norm = tf.clip_by_global_norm([g, h], 2.0)
    by_norm = tf.clip_by_norm(g, 1.5)
    fetches = {"norm": norm, "global_norm": tf.global_norm([g, h]), "cg_values": cg.values,
               "cg_indices": cg.indices, "ch": ch, "by_norm_values": by_norm.values}
    kinds = {"cg_sparse": _is_slices(tf, cg), "by_norm_sparse": _is_slices(tf, by_norm)}
    return lambda sess: {**sess.run(fetches), **kinds}


def _sparse_training(tf, make_opt, steps=3, dtype=np.float32):
    init = _table(4).astype(dtype)
    params = tf.Variable(init, name="emb")
    dense = tf.Variable(np.arange(3, dtype=dtype), name="dense")
    ids = tf.placeholder(tf.int32, [None], name="ids")
    target = np.random.RandomState(5).randn(4, 3).astype(dtype)
    rows = tf.gather(params, ids)
    loss = tf.reduce_sum((rows * dense - target[:1]) ** 2)
    opt = make_opt()
    step = opt.minimize(loss)
    batches = [[3, 1, 3], [7, 0, 0], [3, 9, 2]]

    def run(sess):
        out = {}
        for i in range(steps):
            sess.run(step, {ids: batches[i % len(batches)]})
        out["params"] = sess.run(params)
        out["dense"] = sess.run(dense)
        for name in opt.get_slot_names():
            out[f"slot_{name}"] = sess.run(opt.get_slot(params, name))
            out[f"slot_{name}_name"] = opt.get_slot(params, name).op.name
        return out
    return run


@case
def sparse_gradient_descent(tf):
    return _sparse_training(tf, lambda: tf.train.GradientDescentOptimizer(0.1))


@case
def sparse_momentum(tf):
    return _sparse_training(tf, lambda: tf.train.MomentumOptimizer(0.05, 0.9))


@case
def sparse_momentum_nesterov(tf):
    return _sparse_training(tf, lambda: tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True))


@case
def sparse_adagrad(tf):
    return _sparse_training(tf, lambda: tf.train.AdagradOptimizer(0.2))


@case(rtol=1e-4, atol=1e-5)
def sparse_adam(tf):
    return _sparse_training(tf, lambda: tf.train.AdamOptimizer(0.05))


@case(rtol=1e-4, atol=1e-5)
def sparse_rmsprop(tf):
    return _sparse_training(tf, lambda: tf.train.RMSPropOptimizer(0.01, momentum=0.5))


@case(rtol=1e-4, atol=1e-5)
def sparse_rmsprop_centered(tf):
    return _sparse_training(tf, lambda: tf.train.RMSPropOptimizer(0.01, centered=True))


@case(rtol=1e-4, atol=1e-5)
def sparse_ftrl(tf):
    return _sparse_training(tf, lambda: tf.train.FtrlOptimizer(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02))


@case(rtol=1e-4, atol=1e-5)
def sparse_ftrl_shrinkage(tf):
    return _sparse_training(tf, lambda: tf.train.FtrlOptimizer(
        0.1, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.1))


@case(rtol=1e-4, atol=1e-5)
def sparse_adadelta(tf):
    return _sparse_training(tf, lambda: tf.train.AdadeltaOptimizer(1.0))


@case(rtol=1e-4, atol=1e-5)
def sparse_proximal_adagrad(tf):
    return _sparse_training(tf, lambda: tf.train.ProximalAdagradOptimizer(
        0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.05))


@case
def scatter_ops_on_variables(tf):
    base = np.random.RandomState(6).randn(5, 2).astype(np.float32)
    upd = np.random.RandomState(7).randn(3, 2).astype(np.float32) + 2.0
    idx = np.array([4, 1, 4], dtype=np.int32)
    out = {}
    ops = {"update": tf.scatter_update, "add": tf.scatter_add, "sub": tf.scatter_sub,
           "mul": tf.scatter_mul, "div": tf.scatter_div, "min": tf.scatter_min,
           "max": tf.scatter_max}
    for name, fn in ops.items():
        v = tf.Variable(base, name=f"v_{name}")
        u = idx if name != "update" else np.array([4, 1, 0], np.int32)
        out[name] = fn(v, u, upd)
        out[name + "_name"] = out[name].op.name
    ints = tf.Variable(np.array([10, 20, -7], np.int32), name="ints")
    out["int_div"] = tf.scatter_div(ints, [0, 2], [3, 2])
    scalar = tf.Variable(base, name="scalar")
    out["scalar_update"] = tf.scatter_add(scalar, [[0, 2]], 1.5)
    return out


@case
def unique_partition_stitch(tf):
    x = np.array([4, 1, 4, 9, 1, 0], np.int32)
    y, idx = tf.unique(x)
    data = np.random.RandomState(8).randn(6, 2)
    parts = tf.dynamic_partition(data, np.array([1, 0, 1, 2, 0, 1], np.int32), 3)
    stitched = tf.dynamic_stitch([[0, 3], [1, 2, 5], [4]],
                                 [np.ones([2, 2]), np.zeros([3, 2]), np.full([1, 2], 7.0)])
    d = tf.constant(data)
    p = tf.dynamic_partition(d, np.array([1, 0, 1, 2, 0, 1], np.int32), 3)
    s = tf.dynamic_stitch([[0, 2], [1, 3, 4]], [p[0] * 2.0, p[1] * 3.0])
    grad, = tf.gradients(tf.reduce_sum(s * s) + tf.reduce_sum(p[2]), [d])
    return {"y": y, "idx": idx, "p0": parts[0], "p1": parts[1], "p2": parts[2],
            "stitched": stitched, "s": s, "grad": grad}


def _shards(tf, table, n, strategy):
    if strategy == "mod":
        parts = [table[i::n] for i in range(n)]
    else:
        bounds = np.cumsum([0] + [len(table) // n + (i < len(table) % n) for i in range(n)])
        parts = [table[bounds[i]:bounds[i + 1]] for i in range(n)]
    return [tf.Variable(p, name=f"shard_{i}") for i, p in enumerate(parts)]


@case
def embedding_lookup_over_shards(tf):
    table = _table(seed=10, rows=11).astype(np.float64)
    ids = np.array([[10, 0, 4], [4, 7, 2]], dtype=np.int64)
    out = {}
    for strategy in ("mod", "div"):
        shards = _shards(tf, table, 3, strategy)
        y = tf.nn.embedding_lookup(shards, ids, partition_strategy=strategy)
        grads = tf.gradients(tf.reduce_sum(y * y), shards)
        out[f"{strategy}_y"] = y
        out[f"{strategy}_y_name"] = y.op.name
        for i, g in enumerate(grads):
            out[f"{strategy}_grad{i}"] = tf.convert_to_tensor(g)
    single = tf.Variable(table, name="single")
    y1 = tf.nn.embedding_lookup(single, ids, name="lookup")
    g1, = tf.gradients(tf.reduce_sum(y1 * 2.0), [single])
    out.update({"single": y1, "single_name": y1.op.name, "single_grad_values": g1.values,
                "single_grad_indices": g1.indices})
    clipped = tf.nn.embedding_lookup(_shards(tf, table, 2, "mod"), ids, max_norm=0.8)
    out["clipped"] = clipped
    out["clipped_single"] = tf.nn.embedding_lookup(single, [3, 5], max_norm=0.5)
    return out


@case
def partitioned_variables_names_and_values(tf):
    def init(shape, dtype=None, partition_info=None):
        offset = partition_info.single_offset(shape)
        rows = np.arange(offset, offset + shape[0], dtype=np.float32)[:, None]
        return tf.constant(rows * np.ones(shape[1:], np.float32) + 0.5, dtype=dtype)

    out = {}
    with tf.variable_scope("model", partitioner=tf.fixed_size_partitioner(3)):
        emb = tf.get_variable("emb", [11, 2], initializer=init)
        scalar = tf.get_variable("scalar", [], initializer=tf.zeros_initializer())
    mm = tf.get_variable("mm", [40, 4], initializer=tf.ones_initializer(),
                         partitioner=tf.min_max_variable_partitioner(5, min_slice_size=128))
    axis = tf.get_variable("axis", [7, 6], initializer=tf.zeros_initializer(),
                           partitioner=tf.variable_axis_size_partitioner(50, axis=1))
    with tf.variable_scope("model", reuse=True, partitioner=tf.fixed_size_partitioner(3)):
        again = tf.get_variable("emb", [11, 2])
    y = tf.nn.embedding_lookup(emb, [10, 0, 5], partition_strategy="div")
    names = [v.op.name for v in tf.global_variables()]
    shapes = [v.get_shape().as_list() for v in tf.global_variables()]
    fetches = {"full": tf.convert_to_tensor(emb), "lookup": y,
               "grad": tf.convert_to_tensor(tf.gradients(tf.reduce_sum(y), [list(emb)[1]])[0])}
    out = {"names": names, "shapes": str(shapes), "reused": again is emb,
           "scalar_name": scalar.op.name, "mm_parts": len(list(mm)), "axis_parts": len(list(axis)),
           "emb_len": len(emb), "emb_shape": emb.get_shape().as_list()}
    return lambda sess: {**sess.run(fetches), **out}


@case
def sparse_training_of_partitioned_embedding(tf):
    table = _table(seed=11, rows=9)

    def init(shape, dtype=None, partition_info=None):
        offset = partition_info.single_offset(shape)
        return tf.constant(table[offset:offset + shape[0]])

    emb = tf.get_variable("emb", [9, 3], initializer=init, partitioner=tf.fixed_size_partitioner(2))
    with tf.variable_scope("errors"):
        try:
            tf.get_variable("from_value", initializer=table,
                            partitioner=tf.fixed_size_partitioner(2))
            error = "none"
        except ValueError as e:
            error = str(e)
    ids = tf.constant([8, 1, 8, 4])
    loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) ** 2)
    opt = tf.train.AdagradOptimizer(0.3)
    train = opt.minimize(loss)

    def run(sess):
        for _ in range(2):
            sess.run(train)
        out = {"full": sess.run(tf.convert_to_tensor(emb))}
        out["slots"] = [opt.get_slot(v, "accumulator").op.name for v in emb]
        out["error"] = error
        return out
    return run


@case
def embedding_lookup_sparse_combiners(tf):
    table = _table(seed=12, rows=7, dim=2).astype(np.float64)
    params = tf.Variable(table, name="params")
    shards = _shards(tf, table, 2, "mod")
    # Rows 0 and 2 of the batch have ids, row 1 has none, row 3 has one repeated id.
    indices = np.array([[0, 0], [0, 1], [2, 0], [3, 0], [3, 1]], np.int64)
    sp_ids = tf.SparseTensor(indices, np.array([1, 6, 3, 5, 5], np.int64), [4, 2])
    sp_weights = tf.SparseTensor(indices, np.array([0.5, 2.0, 1.5, 1.0, 3.0]), [4, 2])
    out = {}
    for combiner in ("sum", "mean", "sqrtn"):
        y = tf.nn.embedding_lookup_sparse(params, sp_ids, None, combiner=combiner)
        yw = tf.nn.embedding_lookup_sparse(shards, sp_ids, sp_weights, combiner=combiner)
        g, = tf.gradients(tf.reduce_sum(y * y), [params])
        gw = tf.gradients(tf.reduce_sum(yw * yw), shards)
        out[f"{combiner}"] = y
        out[f"{combiner}_weighted"] = yw
        out[f"{combiner}_grad"] = tf.convert_to_tensor(g)
        for i, gi in enumerate(gw):
            out[f"{combiner}_weighted_grad{i}"] = tf.convert_to_tensor(gi)
    default = tf.nn.embedding_lookup_sparse(params, sp_ids, sp_weights, max_norm=0.7)
    out["default_mean_max_norm"] = default
    return out


@case
def sparse_tensor_feed_fetch_and_to_dense(tf):
    sp = tf.sparse_placeholder(tf.float32, shape=[3, 4], name="sp")
    sp_open = tf.sparse_placeholder(tf.int32, name="open")
    values = tf.placeholder(tf.float32, [3])
    dense = tf.sparse_to_dense([[0, 1], [1, 3], [2, 0]], [3, 4], values * values, -1.0)
    grad, default_grad = tf.gradients(tf.reduce_sum(dense * 3.0), [values, dense.op.inputs[3]])
    feeds = {sp: tf.SparseTensorValue([[0, 0], [2, 3]], [1.5, -2.0], [3, 4]),
             sp_open: ([[1], [4]], [7, 8], [6]), values: [1.0, 2.0, 3.0]}
    fetches = {"to_dense": tf.sparse.to_dense(sp),
               "open_dense": tf.sparse_tensor_to_dense(sp_open, 5),
               "sp_values": sp.values, "sp_indices": sp.indices, "sp_shape": sp.dense_shape,
               "dense": dense, "grad": grad, "default_grad": default_grad}
    static = {"sp_static_shape": sp.get_shape().as_list(), "names": [sp.values.op.name,
                                                                  sp.indices.op.name]}
    return lambda sess: {**sess.run(fetches, feeds), **static}


@case
def scatter_nd_on_variables(tf):
    base = np.random.RandomState(13).randn(4, 3, 2).astype(np.float32)
    out = {}
    v1 = tf.Variable(base, name="nd_update")
    out["update_rows"] = tf.scatter_nd_update(v1, [[3], [0]], np.ones([2, 3, 2], np.float32))
    v2 = tf.Variable(base, name="nd_add")
    out["add_cells"] = tf.scatter_nd_add(v2, [[1, 2], [1, 2], [0, 0]],
                                         np.full([3, 2], 2.0, np.float32))
    v3 = tf.Variable(base, name="nd_sub")
    out["sub_elements"] = tf.scatter_nd_sub(v3, [[[2, 1, 0]], [[0, 0, 1]]],
                                            np.array([[5.0], [7.0]], np.float32))
    out["name"] = out["update_rows"].op.name
    return out


def _sampled_problem(tf, num_true):
    rng = np.random.RandomState(14)
    weights = tf.Variable(rng.randn(12, 4).astype(np.float32), name="w")
    biases = tf.Variable(rng.randn(12).astype(np.float32), name="b")
    inputs = tf.constant(rng.randn(3, 4).astype(np.float32))
    labels = tf.constant(np.array([[2, 7], [5, 0], [11, 2]], np.int64)[:, :num_true])
    sampled = tf.constant(np.array([7, 3, 9, 0], np.int64))
    true_expected = tf.constant(rng.rand(3, num_true).astype(np.float32) + 0.1)
    sampled_expected = tf.constant(rng.rand(4).astype(np.float32) + 0.1)
    return weights, biases, inputs, labels, (sampled, true_expected, sampled_expected)


@case
def nce_and_sampled_softmax_losses(tf):
    out = {}
    for num_true in (1, 2):
        w, b, x, labels, sampled = _sampled_problem(tf, num_true)
        for hits in (False, True):
            nce = tf.nn.nce_loss(w, b, labels, x, 4, 12, num_true=num_true, sampled_values=sampled,
                                 remove_accidental_hits=hits)
            ssm = tf.nn.sampled_softmax_loss(w, b, labels, x, 4, 12, num_true=num_true,
                                             sampled_values=sampled, remove_accidental_hits=hits)
            key = f"t{num_true}_{'hits' if hits else 'nohits'}"
            gw, gx = tf.gradients(tf.reduce_sum(nce) + tf.reduce_sum(ssm), [w, x])
            out[f"nce_{key}"] = nce
            out[f"ssm_{key}"] = ssm
            out[f"grad_w_{key}"] = tf.convert_to_tensor(gw)
            out[f"grad_x_{key}"] = gx
    shards = [tf.Variable(np.random.RandomState(15 + i).randn(6, 4).astype(np.float32),
                          name=f"ws{i}") for i in range(2)]
    w, b, x, labels, sampled = _sampled_problem(tf, 1)
    out["nce_sharded_div"] = tf.nn.nce_loss(shards, b, labels, x, 4, 12, sampled_values=sampled,
                                            partition_strategy="div")
    return out


@case
def candidate_sampler_expected_counts(tf):
    true = np.array([[0, 3], [9, 1]], np.int64)
    out, static = {}, {}
    for name, fn in (("uniform", tf.nn.uniform_candidate_sampler),
                     ("log_uniform", tf.nn.log_uniform_candidate_sampler)):
        s, te, se = fn(true, 2, 5, False, 10, seed=1)
        out[f"{name}_true_expected"] = te
        out[f"{name}_sampled_expected_for_true"] = fn(true, 2, 3, False, 10, seed=2)[1]
        static[f"{name}_shapes"] = str([s.shape.as_list(), te.shape.as_list(), se.shape.as_list()])
    s, te, se = tf.nn.all_candidate_sampler(true % 4, 2, 4, True)
    out.update({"all_sampled": s, "all_true_expected": te, "all_sampled_expected": se})
    hits = tf.nn.compute_accidental_hits(true, np.array([3, 5, 1, 0, 3], np.int64), 2)
    out.update({"hit_indices": hits[0], "hit_ids": hits[1], "hit_weights": hits[2]})
    return lambda sess: {**sess.run(out), **static}


@case(rtol=1e-4, atol=1e-5)
def sparse_proximal_gradient_descent(tf):
    return _sparse_training(tf, lambda: tf.train.ProximalGradientDescentOptimizer(
        0.1, l1_regularization_strength=0.05, l2_regularization_strength=0.1))


@case(rtol=1e-4, atol=1e-5)
def sparse_adagrad_da(tf):
    step = tf.Variable(3, dtype=tf.int64, name="da_step", trainable=False)
    return _sparse_training(tf, lambda: tf.train.AdagradDAOptimizer(
        0.1, step, l1_regularization_strength=0.01, l2_regularization_strength=0.02))


@case
def sparse_reorder_retain_reduce_matmul(tf):
    rng = np.random.RandomState(16)
    indices = np.array([[2, 1], [0, 3], [1, 0], [0, 1]], np.int64)
    values = tf.constant(rng.randn(4))
    sp = tf.SparseTensor(indices, values, [3, 4])
    ordered = tf.sparse.reorder(sp)
    kept = tf.sparse.retain(ordered, [True, False, True, True])
    b = tf.constant(rng.randn(4, 2))
    bt = tf.constant(rng.randn(2, 3))
    prod = tf.sparse_tensor_dense_matmul(ordered, b)
    prod_adj = tf.sparse_tensor_dense_matmul(ordered, bt, adjoint_a=True, adjoint_b=True)
    g_values, g_b = tf.gradients(tf.reduce_sum(prod * prod) + tf.reduce_sum(ordered.values ** 3),
                                 [values, b])
    return {"ordered_indices": ordered.indices, "ordered_values": ordered.values,
            "kept_indices": kept.indices, "kept_values": kept.values,
            "sum_all": tf.sparse.reduce_sum(ordered), "sum_0": tf.sparse.reduce_sum(ordered, 0),
            "sum_1_keep": tf.sparse_reduce_sum(ordered, axis=1, keepdims=True),
            "prod": prod, "prod_adj": prod_adj, "g_values": g_values,
            "g_b": tf.convert_to_tensor(g_b)}
