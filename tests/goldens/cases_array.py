"""Array ops people use: n-d gather/scatter, segment reductions, partition/stitch, unique,
sort, matrix helpers, tensordot/einsum; values and gradients."""
import numpy as np

from tests.goldens.harness import case


def _grads(tf, y, xs, weights_seed=7):
    """Gradients of a weighted sum of y, so each output element gets its own weight (of
    sum(y * y + y) where y's shape is not static)."""
    if not y.shape.is_fully_defined():
        return tf.gradients(tf.reduce_sum(y * y + y), xs)
    w = np.asarray(np.random.RandomState(weights_seed).randn(*y.shape.as_list()), y.dtype.as_numpy_dtype)
    return tf.gradients(tf.reduce_sum(y * w), xs)


def _add_grads(tf, out, spec):
    """out["d_<key>_<i>"] = gradient of out[key] w.r.t. the i-th tensor, per (key, xs)."""
    for key, xs in spec:
        for i, g in enumerate(_grads(tf, out[key], xs)):
            out[f"d_{key}_{i}"] = g
    return out


@case
def gather_nd_and_scatter_nd(tf):
    rng = np.random.RandomState(0)
    p = tf.constant(rng.randn(3, 4, 2).astype(np.float32))
    g1 = tf.gather_nd(p, [[0, 1], [2, 3], [0, 1]])
    g2 = tf.gather_nd(p, [[[1, 2, 0]], [[0, 0, 1]]])
    u = tf.constant(rng.randn(3, 2).astype(np.float32))
    s = tf.scatter_nd([[1, 0], [3, 1], [1, 0]], u, [4, 2, 2])
    dp, = _grads(tf, g1, [p])
    dp2, = _grads(tf, g2, [p])
    du, = _grads(tf, s, [u])
    return {"g1": g1, "g2": g2, "s": s, "dp": dp, "dp2": dp2, "du": du}


@case
def tensor_scatter_family(tf):
    rng = np.random.RandomState(1)
    t = tf.constant(rng.randn(4, 3).astype(np.float32))
    u = tf.constant(rng.randn(2, 3).astype(np.float32))
    out = {}
    for name, fn in (("update", tf.tensor_scatter_update), ("add", tf.tensor_scatter_add),
                     ("sub", tf.tensor_scatter_sub), ("nd_add", tf.tensor_scatter_nd_add)):
        y = fn(t, [[2], [0]], u)
        dt, du = _grads(tf, y, [t, u])
        out.update({name: y, f"{name}_dt": dt, f"{name}_du": du})
    return out


@case
def sorted_segment_reductions(tf):
    rng = np.random.RandomState(2)
    data = tf.constant(rng.randn(6, 3).astype(np.float32))
    ids = [0, 0, 1, 3, 3, 3]
    out = {}
    for name in ("segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"):
        y = getattr(tf, name)(data, ids)
        out[name] = y
        out[f"{name}_grad"], = _grads(tf, y, [data])
    return out


@case
def unsorted_segment_reductions(tf):
    rng = np.random.RandomState(3)
    data = tf.constant(rng.randn(5, 2).astype(np.float32))
    ids = [2, -1, 0, 2, 0]
    out = {}
    for name in ("unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
                 "unsorted_segment_prod", "unsorted_segment_mean", "unsorted_segment_sqrt_n"):
        y = getattr(tf.math, name)(data, ids, 3)
        out[name] = y
        if name in ("unsorted_segment_max", "unsorted_segment_min"):
            y = y[:2]  # segment 1 is empty: the lowest/highest float, whose weighted sum is inf
        out[f"{name}_grad"], = _grads(tf, y, [data])
    return out


@case
def segment_prod_gradient_with_zeros(tf):
    data = tf.constant(np.array([[0, 2], [3, 0], [0, 0], [5, 7], [0, 4]], np.float32))
    y = tf.segment_prod(data, [0, 0, 1, 1, 1])
    z = tf.unsorted_segment_prod(data, [0, 0, 1, 1, 1], 2)
    dy, = _grads(tf, y, [data])
    dz, = _grads(tf, z, [data])
    return {"y": y, "z": z, "dy": dy, "dz": dz}


@case
def dynamic_partition_and_stitch(tf):
    rng = np.random.RandomState(4)
    data = tf.constant(rng.randn(5, 2).astype(np.float32))
    parts = tf.dynamic_partition(data, [1, 0, 2, 1, 1], 3)
    stitched = tf.dynamic_stitch([[4], [0, 2, 3]], [parts[0] * 0 + parts[2], parts[1]])
    d_parts, = _grads(tf, parts[1], [data])
    d_stitch, = _grads(tf, stitched, [data])
    return {"p0": parts[0], "p1": parts[1], "p2": parts[2], "stitched": stitched,
            "d_parts": d_parts, "d_stitch": d_stitch}


@case
def unique_and_counts(tf):
    x = tf.constant(np.array([4, 1, 4, 9, 1, 1, 0], np.int32))
    y, idx = tf.unique(x)
    y64, idx64, count = tf.unique_with_counts(tf.constant([2.5, -1.0, 2.5], tf.float32), out_idx=tf.int64)
    return {"y": y, "idx": idx, "y64": y64, "idx64": idx64, "count": count}


@case
def sort_and_argsort(tf):
    rng = np.random.RandomState(5)
    x = tf.constant(rng.randn(3, 5).astype(np.float32))
    ints = tf.constant(np.array([[3, 1, 3, -2], [0, 7, 0, 7]], np.int32))
    out = {"asc": tf.sort(x), "desc0": tf.sort(x, axis=0, direction="DESCENDING"),
           "arg": tf.argsort(x), "arg_desc0": tf.argsort(x, axis=0, direction="DESCENDING"),
           "ints": tf.sort(ints), "ints_arg": tf.argsort(ints, stable=True),
           "ints_arg_desc": tf.argsort(ints, direction="DESCENDING")}
    out["d_asc"], = _grads(tf, out["asc"], [x])
    out["d_desc0"], = _grads(tf, out["desc0"], [x])
    return out


@case
def diagonals_and_bands(tf):
    rng = np.random.RandomState(6)
    x = tf.constant(rng.randn(2, 3, 4).astype(np.float32))
    d = tf.constant(rng.randn(2, 3).astype(np.float32))
    sq = tf.constant(rng.randn(3, 3).astype(np.float32))
    out = {"diag": tf.diag(d), "diag_part": tf.diag_part(sq), "matrix_diag": tf.matrix_diag(d),
           "matrix_diag_part": tf.matrix_diag_part(x), "set_diag": tf.matrix_set_diag(x, d),
           "band_1_0": tf.matrix_band_part(x, 1, 0), "band_all_2": tf.matrix_band_part(x, -1, 2),
           "trace": tf.trace(x), "eye": tf.eye(3), "eye_batch": tf.eye(2, 3, batch_shape=[2]),
           "eye_int": tf.eye(2, dtype=tf.int32)}
    return _add_grads(tf, out, (("diag", [d]), ("diag_part", [sq]), ("matrix_diag", [d]),
                                ("matrix_diag_part", [x]), ("set_diag", [x, d]), ("band_1_0", [x]),
                                ("trace", [x])))


@case
def linspace_meshgrid_reverse_sequence(tf):
    rng = np.random.RandomState(7)
    x = tf.constant(rng.randn(3, 5, 2).astype(np.float32))
    rs = tf.reverse_sequence(x, [5, 0, 3], seq_axis=1, batch_axis=0)
    rs_t = tf.reverse_sequence(tf.transpose(x, [1, 0, 2]), tf.constant([2, 4, 1], tf.int64), seq_dim=0, batch_dim=1)
    gx, gy = tf.meshgrid([1.0, 2.0, 3.0], [10.0, 20.0], indexing="xy")
    ix, iy, iz = tf.meshgrid([1, 2], [3, 4, 5], [6], indexing="ij")
    d_rs, = _grads(tf, rs, [x])
    return {"lin": tf.linspace(-1.0, 2.0, 7), "lin64": tf.lin_space(tf.constant(0.0, tf.float64), 1.0, 4),
            "lin1": tf.linspace(5.0, 6.0, 1), "rs": rs, "rs_t": rs_t, "d_rs": d_rs,
            "gx": gx, "gy": gy, "ix": ix, "iy": iy, "iz": iz}


@case
def tensordot_and_einsum(tf):
    rng = np.random.RandomState(8)
    a = tf.constant(rng.randn(2, 3, 4).astype(np.float32))
    b = tf.constant(rng.randn(4, 5).astype(np.float32))
    sq = tf.constant(rng.randn(3, 3).astype(np.float32))
    out = {"td1": tf.tensordot(a, b, 1), "td_pairs": tf.tensordot(a, a, [[0, 2], [0, 2]]),
           "td_outer": tf.tensordot(b[0], b[1], 0),
           "matmul": tf.einsum("ij,jk->ik", a[0], b), "batch": tf.einsum("bij,bkj->bik", a, a),
           "transpose": tf.einsum("ij->ji", b), "trace": tf.einsum("ii", sq),
           "diag": tf.einsum("ii->i", sq), "outer": tf.einsum("i,j->ij", b[0], b[1]),
           "sum_all": tf.einsum("ij->", b), "col_sums": tf.einsum("bij->j", a),
           "chain": tf.einsum("ij,jk,kl->il", a[0], b, tf.transpose(b)),
           "ellipsis": tf.einsum("...ij,jk->...ik", a, b), "upper": tf.einsum("BTH,HD->BTD", a, b),
           "broadcast": tf.einsum("...ij,...jk->...ik", a[:1], tf.stack([b, 2 * b])),
           "broadcast_vec": tf.einsum("...j,j->...", a, b[:, 0])}
    return _add_grads(tf, out, (("td1", [a, b]), ("td_pairs", [a]), ("batch", [a]), ("trace", [sq]),
                                ("chain", [a, b]), ("ellipsis", [a, b]), ("broadcast", [a, b])))


@case
def roll(tf):
    x = tf.constant(np.random.RandomState(9).randn(2, 3, 4).astype(np.float32))
    a = tf.roll(x, [1, -2], [0, 2])
    b = tf.roll(x, 5, 1)
    da, = _grads(tf, a, [x])
    db, = _grads(tf, b, [x], weights_seed=8)
    return {"a": a, "b": b, "da": da, "db": db}


@case
def gather_and_gather_nd_with_batch_dims(tf):
    p = tf.constant(np.random.RandomState(10).randn(2, 3, 4, 5).astype(np.float32))
    out = {"b1": tf.gather(p, [[2, 0, 2], [1, 1, 0]], batch_dims=1),
           "b1_axis2": tf.gather(p, [[3, 0], [1, 2]], axis=2, batch_dims=1),
           "b2_axis3": tf.gather(p, [[[4], [0], [1]], [[2], [2], [3]]], axis=3, batch_dims=2),
           "b_neg": tf.gather(p, [[1, 0], [2, 2]], batch_dims=-1),
           "nd_b1": tf.gather_nd(p, [[[1, 2], [0, 3]], [[2, 0], [1, 1]]], batch_dims=1)}
    return _add_grads(tf, out, ((k, [p]) for k in list(out)))


@case
def bincount_setdiff_unravel_searchsorted(tf):
    arr = tf.constant(np.array([1, 3, 3, 0, 7], np.int32))
    seq = tf.constant(np.array([[0.0, 3.0, 9.0, 9.0, 10.0], [1.0, 2.0, 3.0, 4.0, 5.0]], np.float32))
    vals = tf.constant(np.array([[2.0, 4.0, 9.0], [0.0, 2.0, 6.0]], np.float32))
    out, idx = tf.setdiff1d([1, 2, 3, 4, 5, 6], [1, 3, 5])
    return {"count": tf.bincount(arr), "count_min": tf.bincount(arr, minlength=10),
            "count_max": tf.bincount(arr, maxlength=4),
            "count_w": tf.bincount(arr, weights=tf.constant([0.5, 1.0, 2.0, 3.0, 4.0])),
            "count_empty": tf.bincount(tf.zeros([0], tf.int32)), "diff": out, "diff_idx": idx,
            "unravel": tf.unravel_index([22, 41, 37], [7, 6]),
            "left": tf.searchsorted(seq, vals), "right": tf.searchsorted(seq, vals, side="right"),
            "bcast": tf.broadcast_dynamic_shape([2, 1, 3], [4, 1])}


@case
def space_depth_and_batch(tf):
    x = tf.constant(np.random.RandomState(11).randn(2, 4, 6, 3).astype(np.float32))
    out = {"s2d": tf.space_to_depth(x, 2), "d2s": tf.depth_to_space(tf.tile(x, [1, 1, 1, 4]), 2),
           "s2b": tf.space_to_batch_nd(x, [2, 3], [[1, 1], [0, 3]]),
           "s2b_1d": tf.space_to_batch_nd(x, [2], [[0, 2]]),
           "s2b_4d": tf.space_to_batch(x, [[0, 0], [1, 1]], block_size=2)}
    out["b2s"] = tf.batch_to_space_nd(out["s2b"], [2, 3], [[1, 0], [0, 2]])
    out["b2s_4d"] = tf.batch_to_space(out["s2b_4d"], [[0, 0], [1, 1]], 2)
    return _add_grads(tf, out, ((k, [x]) for k in ("s2d", "d2s", "s2b", "b2s")))


@case
def off_diagonals(tf):
    rng = np.random.RandomState(12)
    x = tf.constant(rng.randn(2, 3, 4).astype(np.float32))
    d = tf.constant(rng.randn(2, 2).astype(np.float32))
    out = {"diag_k1": tf.linalg.diag(d, k=1), "diag_km1": tf.linalg.diag(d, k=-1),
           "diag_rows": tf.linalg.diag(d, num_rows=3), "diag_cols": tf.matrix_diag(d, num_cols=4),
           "diag_pad": tf.linalg.diag(d, num_rows=3, num_cols=4, k=-1, padding_value=9.0),
           "part_k1": tf.linalg.diag_part(x, k=1), "part_km2": tf.matrix_diag_part(x, k=-2),
           "set_k2": tf.linalg.set_diag(x, d, k=2), "set_km1": tf.matrix_set_diag(x, d, k=-1)}
    return _add_grads(tf, out, (("diag_pad", [d]), ("part_k1", [x]), ("set_k2", [x, d]),
                                ("set_km1", [x, d])))
