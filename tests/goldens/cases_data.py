"""tf.data pipelines: the element sequences TF produces. Shuffled pipelines record the
multiset (sorted): dtf's order for a seed is deterministic but TF's generator differs."""
import numpy as np

from tests.goldens.harness import case


def _drain(sess, nxt, limit=1000):
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(nxt))
        except Exception as e:  # noqa: BLE001 - the end of input, in either library
            if type(e).__name__ != "OutOfRangeError":
                raise
            return out
    raise AssertionError("pipeline did not end")


def _flat(batches):
    return np.concatenate([np.reshape(b, [-1]) for b in batches]) if batches else np.zeros([0])


def _shape_list(shape):
    return [-1 if d is None else d for d in shape.as_list()]


def _iterate(tf, ds, **names):
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    return lambda sess: {"values": _flat(_drain(sess, nxt)), **names}


@case
def map_then_batch(tf):
    ds = tf.data.Dataset.range(10).map(lambda x: x * x).batch(3)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()

    def run(sess):
        got = _drain(sess, nxt)
        return {"values": _flat(got), "sizes": [len(b) for b in got],
                "shape": _shape_list(ds.output_shapes), "type": ds.output_types.name}
    return run


@case
def dict_structure_through_map(tf):
    rng = np.random.RandomState(0)
    a = rng.randn(5, 2).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices({"a": a, "b": np.arange(5, dtype=np.int32)})
    ds = ds.map(lambda d: {"y": d["a"] * tf.cast(d["b"], tf.float32), "b": d["b"] + 1}).batch(2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()

    def run(sess):
        got = _drain(sess, nxt)
        return {"y": np.concatenate([g["y"] for g in got]), "b": np.concatenate([g["b"] for g in got]),
                "keys": sorted(ds.output_types), "y_shape": _shape_list(ds.output_shapes["y"]),
                "b_type": ds.output_types["b"].name}
    return run


@case
def filter_flat_map_zip_concatenate(tf):
    D = tf.data.Dataset
    evens = D.range(12).filter(lambda x: tf.equal(x % 2, 0))
    flat = D.range(1, 4).flat_map(lambda x: D.from_tensors(x).repeat(x))
    zipped = D.zip((D.range(3), D.range(10, 20))).map(lambda a, b: a * 100 + b)
    cat = D.range(3).concatenate(D.range(7, 9))
    its = [tf.data.make_one_shot_iterator(d).get_next() for d in (evens, flat, zipped, cat)]

    def run(sess):
        return {k: _flat(_drain(sess, n)) for k, n in zip(("evens", "flat", "zipped", "cat"), its)}
    return run


@case
def interleave_cycle_and_block(tf):
    D = tf.data.Dataset
    ds = D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(x), cycle_length=2,
                                  block_length=2)
    return _iterate(tf, ds)


@case
def padded_batch_and_unbatch(tf):
    D = tf.data.Dataset
    ds = D.range(1, 6).map(lambda x: tf.fill([x], x)).padded_batch(2, [None])
    fixed = D.range(1, 4).map(lambda x: tf.fill([x], x)).padded_batch(
        2, [5], padding_values=tf.constant(-1, tf.int64))
    unb = D.from_tensors(np.arange(6).reshape(3, 2)).unbatch()
    nxt = [tf.data.make_one_shot_iterator(d).get_next() for d in (ds, fixed, unb)]

    def run(sess):
        got = _drain(sess, nxt[0])
        return {"b0": got[0], "b1": got[1], "b2": got[2], "fixed": _flat(_drain(sess, nxt[1])),
                "unb": _flat(_drain(sess, nxt[2]))}
    return run


@case
def repeat_take_skip_shard(tf):
    D = tf.data.Dataset
    dss = {"repeat": D.range(3).repeat(2), "take": D.range(3).repeat().take(7),
           "skip": D.range(6).skip(4), "shard": D.range(10).shard(3, 1),
           "drop": D.range(7).batch(3, drop_remainder=True), "cache": D.range(3).cache().repeat(2),
           "prefetch": D.range(5).prefetch(2)}
    nxt = {k: tf.data.make_one_shot_iterator(d).get_next() for k, d in dss.items()}
    return lambda sess: {k: _flat(_drain(sess, n)) for k, n in nxt.items()}


@case
def shuffle_multiset_and_repeat_epochs(tf):
    ds = tf.data.Dataset.range(20).shuffle(8, seed=7).repeat(2)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()

    def run(sess):
        got = _flat(_drain(sess, nxt))
        return {"epoch0": np.sort(got[:20]), "epoch1": np.sort(got[20:]), "n": len(got)}
    return run


@case
def generator_source(tf):
    def gen():
        for i in range(4):
            yield i, np.full([i], 0.5, np.float32)
    ds = tf.data.Dataset.from_generator(gen, (tf.int32, tf.float32), ([], [None]))
    nxt = tf.data.make_one_shot_iterator(ds).get_next()

    def run(sess):
        got = _drain(sess, nxt)
        return {"ints": np.array([g[0] for g in got]), "lens": [len(g[1]) for g in got],
                "sum": np.float32(sum(g[1].sum() for g in got))}
    return run


@case
def initializable_with_fed_placeholder(tf):
    x = tf.placeholder(tf.float32, [None, 2])
    it = tf.data.make_initializable_iterator(
        tf.data.Dataset.from_tensor_slices(x).map(lambda r: tf.reduce_sum(r)).batch(2))
    nxt = it.get_next()
    rng = np.random.RandomState(1)
    first, second = rng.randn(5, 2).astype(np.float32), rng.randn(3, 2).astype(np.float32)

    def run(sess):
        sess.run(it.initializer, {x: first})
        a = _flat(_drain(sess, nxt))
        sess.run(it.initializer, {x: second})
        return {"a": a, "b": _flat(_drain(sess, nxt))}
    return run


def _examples(tf):
    rng = np.random.RandomState(5)
    out = []
    for i in range(4):
        out.append(tf.train.Example(features=tf.train.Features(feature={
            "f": tf.train.Feature(float_list=tf.train.FloatList(value=rng.randn(3).astype(np.float32).tolist())),
            "i": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -i, 2 ** 40 + i])),
            "raw": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[rng.randint(0, 255, 8).astype(np.uint8).tobytes()])),
            "seq": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5] * i)),
        })).SerializeToString())
    return out


@case
def parse_example_and_decode_raw(tf):
    records = _examples(tf)
    s = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(s, {
        "f": tf.FixedLenFeature([3], tf.float32), "i": tf.FixedLenFeature([3], tf.int64),
        "raw": tf.FixedLenFeature([], tf.string),
        "absent": tf.FixedLenFeature([2], tf.int64, default_value=[7, 8]),
        "seq": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True, default_value=-1.0)})
    one = tf.parse_single_example(s[1], {"i": tf.FixedLenFeature([3], tf.int64)})
    return {"f": parsed["f"], "i": parsed["i"], "absent": parsed["absent"], "seq": parsed["seq"],
            "raw_u8": tf.decode_raw(parsed["raw"], tf.uint8),
            "raw_i16": tf.decode_raw(parsed["raw"], tf.int16),
            "raw_be": tf.decode_raw(parsed["raw"], tf.int32, little_endian=False),
            "one_i": one["i"]}, {s: records}


@case
def parse_var_len_features_to_sparse(tf):
    rng = np.random.RandomState(6)
    records = []
    for n in (3, 0, 1, 4):
        feature = {"ids": tf.train.Feature(int64_list=tf.train.Int64List(
                       value=rng.randint(-50, 2 ** 40, n).tolist())),
                   "x": tf.train.Feature(float_list=tf.train.FloatList(
                       value=rng.randn(n).astype(np.float32).tolist()))}
        if n:
            feature["words"] = tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[b"w%d" % k for k in range(n)]))
        records.append(tf.train.Example(features=tf.train.Features(feature=feature))
                       .SerializeToString())
    s = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(s, {"ids": tf.VarLenFeature(tf.int64),
                                  "x": tf.io.VarLenFeature(tf.float32),
                                  "words": tf.VarLenFeature(tf.string),
                                  "fixed": tf.FixedLenFeature([], tf.int64, default_value=5)})
    one = tf.parse_single_example(s[3], {"x": tf.VarLenFeature(tf.float32)})
    empty = tf.parse_single_example(s[1], {"words": tf.VarLenFeature(tf.string)})
    out = {"fixed": parsed["fixed"],
           "ids_dense": tf.sparse.to_dense(parsed["ids"]),
           "x_dense": tf.sparse_tensor_to_dense(parsed["x"], default_value=-1.0),
           "words_dense": tf.sparse.to_dense(parsed["words"], default_value=""),
           "one_dense": tf.sparse.to_dense(one["x"])}
    for key in ("ids", "x", "words"):
        sp = parsed[key]
        out.update({f"{key}_indices": sp.indices, f"{key}_values": sp.values,
                    f"{key}_shape": sp.dense_shape})
    out.update({"one_indices": one["x"].indices, "one_shape": one["x"].dense_shape,
                "empty_indices": empty["words"].indices, "empty_shape": empty["words"].dense_shape,
                "empty_values": empty["words"].values})
    return out, {s: records}


@case
def tfrecord_dataset_of_tf_written_file(tf):
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                        "tf_examples.tfrecord")

    def parse(r):
        f = tf.parse_single_example(r, {"image": tf.FixedLenFeature([], tf.string),
                                        "label": tf.FixedLenFeature([], tf.int64),
                                        "name": tf.FixedLenFeature([], tf.string)})
        return tf.reshape(tf.decode_raw(f["image"], tf.uint8), [4, 4]), f["label"], f["name"]
    ds = tf.data.TFRecordDataset(path).map(parse).batch(4)
    gz = tf.data.TFRecordDataset(path + ".gz", compression_type="GZIP").map(parse).batch(6)
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    gz_next = tf.data.make_one_shot_iterator(gz).get_next()

    def run(sess):
        got = _drain(sess, nxt)
        g = sess.run(gz_next)
        return {"images": np.concatenate([b[0] for b in got]), "labels": _flat([b[1] for b in got]),
                "names": np.concatenate([b[2] for b in got]), "gz_labels": g[1]}
    return run


@case
def parse_single_sequence_example(tf):
    rng = np.random.RandomState(9)
    ex = tf.train.SequenceExample()
    ex.context.feature["length"].int64_list.value.append(3)
    ex.context.feature["tag"].bytes_list.value.append(b"abc")
    tokens = ex.feature_lists.feature_list["tokens"]
    vectors = ex.feature_lists.feature_list["vectors"]
    for t in range(3):
        tokens.feature.add().int64_list.value.append(10 + t)
        vectors.feature.add().float_list.value.extend(rng.randn(2).astype(np.float32).tolist())
    s = tf.placeholder(tf.string, [])
    context, sequence = tf.parse_single_sequence_example(
        s, context_features={"length": tf.FixedLenFeature([], tf.int64),
                             "tag": tf.FixedLenFeature([], tf.string),
                             "other": tf.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0])},
        sequence_features={"tokens": tf.FixedLenSequenceFeature([], tf.int64),
                           "vectors": tf.FixedLenSequenceFeature([2], tf.float32),
                           "absent": tf.FixedLenSequenceFeature([3], tf.int64, allow_missing=True)})
    return {"length": context["length"], "tag": context["tag"], "other": context["other"],
            "tokens": sequence["tokens"], "vectors": sequence["vectors"],
            "absent": sequence["absent"]}, {s: ex.SerializeToString()}


@case
def decode_csv_columns_defaults_and_quotes(tf):
    lines = tf.constant(['1,2.5,"a,b",7', '3,,plain,', '-4,1e3,"say ""hi""",NA'])
    a, b, c, d = tf.decode_csv(lines, [[0], [-1.0], [""], tf.constant([9], tf.int64)], na_value="NA")
    sel = tf.decode_csv(tf.constant(["x;1;y;2.5"]), [[0], [0.0]], field_delim=";", select_cols=[1, 3])
    ds = tf.data.Dataset.from_tensor_slices(lines).map(
        lambda line: tf.decode_csv(line, [[0], [0.0], ["?"], [0]], na_value="NA")[0])
    nxt = tf.data.make_one_shot_iterator(ds).get_next()

    def run(sess):
        got = sess.run([a, b, c, d] + sel)
        return {"a": got[0], "b": got[1], "c": got[2], "d": got[3], "s0": got[4], "s1": got[5],
                "ds": _flat(_drain(sess, nxt))}
    return run
