"""tf.sparse: SparseTensor values and gradients of reorder, retain, reduce_sum, to_dense,
sparse_tensor_dense_matmul, reshape, add (sparse + sparse with thresh, sparse + dense) and
concat (with expand_nonconcat_dim)."""
import numpy as np

from tests.goldens.harness import case


def _sp(tf, indices, values, shape, dtype=np.float32):
    return tf.SparseTensor(np.asarray(indices, np.int64), np.asarray(values, dtype),
                           np.asarray(shape, np.int64))


def _fetch(sp, prefix):
    return {f"{prefix}_indices": sp.indices, f"{prefix}_values": sp.values,
            f"{prefix}_shape": sp.dense_shape}


@case
def reorder_retain_to_dense(tf):
    values = tf.constant([1.0, 2.0, 3.0, 4.0])
    sp = tf.SparseTensor(np.array([[2, 1], [0, 3], [1, 0], [0, 0]], np.int64), values,
                         np.array([3, 4], np.int64))
    ordered = tf.sparse.reorder(sp)
    kept = tf.sparse.retain(ordered, [True, False, True, True])
    dense = tf.sparse.to_dense(ordered, default_value=-1.0)
    g, = tf.gradients(tf.reduce_sum(ordered.values * [1.0, 2.0, 3.0, 4.0]), [values])
    return {**_fetch(ordered, "ordered"), **_fetch(kept, "kept"), "dense": dense, "grad": g}


@case
def reduce_sum_and_matmul(tf):
    values = tf.constant([1.0, -2.0, 3.0, 0.5])
    sp = tf.SparseTensor(np.array([[0, 0], [0, 2], [1, 1], [2, 2]], np.int64), values,
                         np.array([3, 3], np.int64))
    b = tf.constant(np.random.RandomState(0).randn(3, 2).astype(np.float32))
    prod = tf.sparse_tensor_dense_matmul(sp, b)
    prod_t = tf.sparse.matmul(sp, b, adjoint_a=True)
    gv, gb = tf.gradients(tf.reduce_sum(prod * prod) + tf.reduce_sum(prod_t), [values, b])
    return {"all": tf.sparse.reduce_sum(sp), "axis0": tf.sparse.reduce_sum(sp, 0),
            "axis1_keep": tf.sparse_reduce_sum(sp, 1, keepdims=True), "prod": prod,
            "prod_t": prod_t, "grad_values": gv, "grad_b": tf.convert_to_tensor(gb)}


@case
def reshape(tf):
    sp = _sp(tf, [[0, 0, 1], [0, 1, 0], [1, 0, 2], [1, 1, 1]], [1, 2, 3, 4], [2, 2, 3])
    flat = tf.sparse.reshape(sp, [4, 3])
    inferred = tf.sparse_reshape(sp, [-1, 6])
    shape_t = tf.placeholder(tf.int64, [3])
    fed = tf.sparse.reshape(sp, shape_t)
    static = {"flat_static": str(flat.get_shape()), "inferred_static": str(inferred.get_shape())}

    def run(sess):
        out = sess.run({**_fetch(flat, "flat"), **_fetch(inferred, "inferred"),
                        **_fetch(fed, "fed")}, {shape_t: [3, 2, 2]})
        try:
            sess.run(tf.sparse.reshape(sp, shape_t).indices, {shape_t: [5, 1, 1]})
            out["bad_error"] = "none"
        except tf.errors.InvalidArgumentError:
            out["bad_error"] = "InvalidArgumentError"
        return {**out, **static}
    return run


@case
def reshape_values_gradient(tf):
    values = tf.constant([1.0, 2.0, 3.0])
    sp = tf.SparseTensor(np.array([[0, 1], [1, 0], [1, 2]], np.int64), values,
                         np.array([2, 3], np.int64))
    out = tf.sparse.reshape(sp, [3, 2])
    g, = tf.gradients(tf.reduce_sum(tf.sparse.to_dense(out) * [[1.0, 2.0], [3.0, 4.0],
                                                                  [5.0, 6.0]]), [values])
    return {**_fetch(out, "out"), "grad": g}


@case
def add_sparse_sparse(tf):
    av = tf.constant([1.0, 2.0, 3.0, -1.0])
    bv = tf.constant([10.0, -2.05, 5.0, 1.0])
    a = tf.SparseTensor(np.array([[0, 0], [0, 2], [1, 1], [2, 0]], np.int64), av,
                        np.array([3, 3], np.int64))
    b = tf.SparseTensor(np.array([[0, 1], [0, 2], [2, 0], [2, 2]], np.int64), bv,
                        np.array([3, 3], np.int64))
    plain = tf.sparse.add(a, b)
    cut = tf.sparse_add(a, b, thresh=0.1)
    w = tf.constant(np.arange(1, 10, dtype=np.float32).reshape(3, 3))
    ga, gb = tf.gradients(tf.reduce_sum(tf.sparse.to_dense(cut) * w), [av, bv])
    return {**_fetch(plain, "plain"), **_fetch(cut, "cut"), "cut_dense": tf.sparse.to_dense(cut),
            "grad_a": ga, "grad_b": gb}


@case
def add_sparse_dense(tf):
    av = tf.constant([1.0, 2.0, 3.0])
    a = tf.SparseTensor(np.array([[0, 1], [1, 0], [1, 2]], np.int64), av,
                        np.array([2, 3], np.int64))
    d = tf.constant(np.random.RandomState(3).randn(2, 3).astype(np.float32))
    s1 = tf.sparse.add(a, d)
    s2 = tf.sparse_add(d, a)
    ga, gd = tf.gradients(tf.reduce_sum(s1 * s1) + tf.reduce_sum(s2), [av, d])
    return {"s1": s1, "s2": s2, "grad_a": ga, "grad_d": gd}


@case
def add_int64_values(tf):
    a = _sp(tf, [[0], [3]], [5, 7], [4], np.int64)
    b = _sp(tf, [[1], [3]], [1, -7], [4], np.int64)
    return _fetch(tf.sparse.add(a, b), "sum")


@case
def concat(tf):
    a = _sp(tf, [[0, 1], [1, 0]], [1, 2], [2, 2])
    b = _sp(tf, [[0, 0], [1, 2], [0, 2]], [3, 4, 5], [2, 3])
    c = _sp(tf, [[0, 0]], [6], [2, 1])
    cols = tf.sparse.concat(1, [a, b, c])
    d = _sp(tf, [[1, 0]], [7], [2, 2])
    rows = tf.sparse_concat(0, [a, d])
    neg = tf.sparse.concat(-1, [a, c])
    static = {"cols_static": str(cols.get_shape())}
    fetches = {**_fetch(cols, "cols"), **_fetch(rows, "rows"), **_fetch(neg, "neg")}
    return lambda sess: {**sess.run(fetches), **static}


@case
def concat_expand_nonconcat_dim(tf):
    a = _sp(tf, [[0, 1], [2, 0]], [1, 2], [3, 2])
    b = _sp(tf, [[0, 0], [1, 3]], [3, 4], [2, 4])
    out = tf.sparse.concat(1, [a, b], expand_nonconcat_dim=True)
    out0 = tf.sparse_concat(0, [a, b], expand_nonconcat_dim=True)

    def run(sess):
        got = sess.run({**_fetch(out, "out"), **_fetch(out0, "out0")})
        try:
            sess.run(tf.sparse.concat(1, [a, b]).indices)
            got["mismatch_error"] = "none"
        except (tf.errors.InvalidArgumentError, ValueError) as e:
            got["mismatch_error"] = type(e).__name__
        return got
    return run


@case
def sparse_conditional_accumulator(tf):
    """Per-row MEAN over the gradients that carried a row, SUM, stale gradients dropped by
    local_step, set_global_step, the taken dense shape and TF's merge of unsorted indices."""
    acc = tf.SparseConditionalAccumulator(tf.float32, shape=[6, 2])
    total = tf.SparseConditionalAccumulator(tf.float32, reduction_type="SUM",
                                            shared_name="acc_sum")
    idx = tf.placeholder(tf.int64, [None])
    val = tf.placeholder(tf.float32, [None, 2])
    step = tf.placeholder(tf.int64, [])
    applies = [a.apply_grad(idx, val, local_step=step) for a in (acc, total)]
    sliced = acc.apply_indexed_slices_grad(
        tf.IndexedSlices(val, idx, tf.constant([6, 2], tf.int64)), local_step=step)
    take = acc.take_indexed_slices_grad(2)
    take_sum = total.take_grad(2)

    def run(sess):
        out = {}

        def push(ids, rows, at, ops=applies):
            sess.run(ops, {idx: ids, val: np.asarray(rows, np.float32), step: at})

        push([1, 3], [[1, 1], [2, 2]], 0)
        push([0, 3, 5], [[4, 4], [6, 6], [8, 8]], 0)
        push([2], [[9, 9]], -1)                      # stale: behind the global step 0
        out["n"] = sess.run(acc.num_accumulated())
        t, s = sess.run([take, take_sum])
        out.update(mean_indices=t.indices, mean_values=t.values, mean_shape=t.dense_shape,
                   sum_indices=s.indices, sum_values=s.values, sum_shape=s.shape)
        push([4], [[1, 2]], 0, [applies[0]])          # stale now: the take advanced the step
        out["n_after_take"] = sess.run(acc.num_accumulated())
        sess.run(acc.set_global_step(5))
        push([3, 1], [[1, 1], [2, 2]], 5, [sliced])  # unsorted: TF's merge keeps both
        push([1, 4], [[3, 3], [4, 4]], 7, [sliced])
        t = sess.run(take)
        out.update(merged_indices=t.indices, merged_values=t.values)
        try:
            push([6], [[1, 1]], 9, [applies[0]])
            out["bad_index_error"] = "none"
        except tf.errors.InvalidArgumentError:
            out["bad_index_error"] = "InvalidArgumentError"
        return out
    return run
