"""tf.feature_column (TF 1.15's v1 columns, recorded from tf.compat.v1.feature_column): every
column through input_layer and linear_model, TF's string hash (Fingerprint64) and the hashed
crosses bit for bit, the variables' names, and gradients into embedding tables."""
import numpy as np

from tests.goldens.harness import case

_WORDS = ["paris", "rome", "oslo", "", "lima", "kyiv", "naïve", "x" * 70, "y" * 200]


def _init_tables(tf, sess):
    # TF's vocabulary columns are hash tables that need tables_initializer; dtf's need none.
    if hasattr(tf, "tables_initializer"):
        sess.run(tf.tables_initializer())


def _assign_all(tf, sess, seed):
    """Gives every variable seeded random values (TF starts linear weights at zero)."""
    rng = np.random.RandomState(seed)
    names = []
    for v in sorted(tf.global_variables(), key=lambda v: v.name):
        sess.run(v.assign(rng.randn(*v.shape.as_list()).astype(np.float32)))
        names.append(v.name)
    return names


def _run(tf, fetches, seed=None):
    def run(sess):
        _init_tables(tf, sess)
        names = _assign_all(tf, sess, seed) if seed is not None else [
            v.name for v in sorted(tf.global_variables(), key=lambda v: v.name)]
        out = dict(zip(sorted(fetches), sess.run([fetches[k] for k in sorted(fetches)])))
        out["variables"] = np.asarray(names or ["<none>"])
        return out
    return run


@case
def string_hash_fast_matches_fingerprint64(tf):
    rng = np.random.RandomState(0)
    text = ["".join(chr(c) for c in rng.randint(32, 127, n)) for n in range(0, 140, 3)]
    text += ["naïve ünïcödé", "\u4e2d\u6587", "a" * 1000]
    x = tf.constant(np.asarray(text, dtype=object))
    return {"big": tf.string_to_hash_bucket_fast(x, 2 ** 62 + 7),
            "small": tf.string_to_hash_bucket_fast(x, 10),
            "one": tf.string_to_hash_bucket_fast(x, 1)}


@case
def hash_bucket_strings_and_ints(tf):
    fc = tf.feature_column
    feats = {"w": tf.constant([["paris", "rome"], ["", "oslo"], ["", ""], ["lima", "lima"]]),
             "n": tf.constant([[5, -1], [123456789, 0], [-1, -1], [7, 42]], dtype=tf.int64)}
    cols = [fc.indicator_column(fc.categorical_column_with_hash_bucket("w", 13)),
            fc.indicator_column(fc.categorical_column_with_hash_bucket("n", 17, dtype=tf.int64))]
    return _run(tf, {"dense": fc.input_layer(feats, cols)})


@case
def vocabulary_list_oov_and_default(tf):
    fc = tf.feature_column
    feats = {"a": tf.constant([["rome", "tokyo"], ["paris", ""], ["", ""], ["zz", "rome"]]),
             "b": tf.constant([["rome"], ["nowhere"], ["paris"], ["oslo"]]),
             "c": tf.constant([[3, 10], [-1, 7], [1, 1], [99, -1]], dtype=tf.int64)}
    cols = [fc.indicator_column(fc.categorical_column_with_vocabulary_list(
                "a", ["paris", "rome", "oslo"], num_oov_buckets=3)),
            fc.indicator_column(fc.categorical_column_with_vocabulary_list(
                "b", ["paris", "rome"], default_value=1)),
            fc.indicator_column(fc.categorical_column_with_vocabulary_list(
                "c", [1, 3, 7], num_oov_buckets=2))]
    return _run(tf, {"dense": fc.input_layer(feats, cols)})


@case
def identity_and_bucketized(tf):
    fc = tf.feature_column
    feats = {"id": tf.constant([[0, 3], [2, -1], [5, 1]], dtype=tf.int64),
             "x": tf.constant([[-1.0, 0.0], [0.5, 1.0], [2.0, 30.0]]),
             "y": tf.constant([1.0, 2.0, 3.0])}
    x = fc.numeric_column("x", shape=(2,))
    y = fc.numeric_column("y", normalizer_fn=lambda t: t * 2.0 - 1.0)
    cols = [fc.indicator_column(fc.categorical_column_with_identity("id", 4, default_value=0)),
            fc.bucketized_column(x, [0.0, 1.0, 10.0]), x, y]
    lin = fc.linear_model(feats, [fc.bucketized_column(x, [0.0, 1.0, 10.0]), y], units=3)
    return _run(tf, {"dense": fc.input_layer(feats, cols), "linear": lin}, seed=1)


@case
def crossed_columns(tf):
    fc = tf.feature_column
    feats = {"a": tf.constant([["x", "y"], ["z", ""], ["", ""]]),
             "b": tf.constant([["p"], ["q"], ["r"]]),
             "n": tf.constant([[1], [2], [3]], dtype=tf.int64),
             "v": tf.constant([[0.5], [5.0], [50.0]])}
    bucket = fc.bucketized_column(fc.numeric_column("v"), [1.0, 10.0])
    ident = fc.categorical_column_with_identity("n", 5)
    c2 = fc.crossed_column(["a", "b"], 1000)
    c3 = fc.crossed_column([bucket, "b", ident], 97, hash_key=12345)
    nested = fc.crossed_column([c2, bucket], 50)
    cols = [fc.indicator_column(c) for c in (c2, c3, nested)]
    lin = fc.linear_model(feats, [c2, c3], units=1)
    return _run(tf, {"dense": fc.input_layer(feats, cols), "linear": lin}, seed=2)


@case
def embedding_combiners_and_gradient(tf):
    fc = tf.feature_column
    table = np.arange(24, dtype=np.float32).reshape(8, 3) / 10.0
    ids = tf.SparseTensor(indices=[[0, 0], [0, 1], [0, 2], [2, 0], [3, 1]],
                          values=np.array([1, 5, 1, 7, 2], np.int64), dense_shape=[5, 3])
    feats = {"s": ids, "t": tf.constant([["a", "b"], ["", ""], ["c", "a"], ["d", ""], ["", "e"]])}
    s = fc.categorical_column_with_identity("s", 8)
    t = fc.categorical_column_with_hash_bucket("t", 8)
    cols = [fc.embedding_column(s, 3, combiner="sum", initializer=tf.constant_initializer(table)),
            fc.embedding_column(t, 3, combiner="sqrtn",
                                initializer=tf.constant_initializer(table))]
    out = fc.input_layer(feats, cols)
    out2 = fc.input_layer(feats, [fc.embedding_column(s, 3, initializer=tf.constant_initializer(
        table))])
    w = [v for v in tf.global_variables() if v.name.startswith("input_layer/s_embedding")][0]
    g = tf.convert_to_tensor(tf.gradients(tf.reduce_sum(out * out), w)[0])
    return _run(tf, {"out": out, "mean": out2, "grad": g})


def _linear_model_combiner(tf, combiner):
    fc = tf.feature_column
    feats = {"w": tf.constant([["paris", "rome"], ["", "oslo"], ["", ""], ["lima", "lima"]]),
             "z": tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])}
    cols = [fc.categorical_column_with_vocabulary_list("w", ["paris", "rome", "oslo"],
                                                       num_oov_buckets=1),
            fc.numeric_column("z", shape=(2,))]
    # One model per graph: a second linear_model in the same graph names its column scopes
    # w_1, z_1 in TF (its Keras-layer scoping); dtf names them w, z.
    return _run(tf, {"out": fc.linear_model(feats, cols, units=2, sparse_combiner=combiner)},
                seed=3)


@case
def linear_model_sum(tf):
    return _linear_model_combiner(tf, "sum")


@case
def linear_model_mean(tf):
    return _linear_model_combiner(tf, "mean")


@case
def linear_model_sqrtn(tf):
    return _linear_model_combiner(tf, "sqrtn")


def _vocab_file(name, words):
    import atexit
    import os
    import shutil
    import tempfile
    # Both TF and dtf read the file when the graph runs or is built, so it lives until exit.
    folder = tempfile.mkdtemp(prefix="fc_vocab_")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"{w}\n" for w in words))
    return path


@case
def vocabulary_file_oov_default_and_size(tf):
    fc = tf.feature_column
    words = _vocab_file("words.txt", ["paris", "rome", "oslo", "naïve", "lima"])
    numbers = _vocab_file("numbers.txt", [1, 3, 7, 12])
    feats = {"a": tf.constant([["rome", "tokyo"], ["paris", ""], ["", ""], ["naïve", "lima"]]),
             "b": tf.constant([["rome"], ["nowhere"], ["paris"], ["lima"]]),
             "c": tf.constant([[3, 10], [-1, 7], [1, 1], [12, -1]], dtype=tf.int64)}
    a = fc.categorical_column_with_vocabulary_file("a", words, num_oov_buckets=3)
    # only the first 3 lines: lima is out of the vocabulary and takes default_value
    b = fc.categorical_column_with_vocabulary_file("b", words, vocabulary_size=3,
                                                   default_value=1)
    c = fc.categorical_column_with_vocabulary_file("c", numbers, num_oov_buckets=2,
                                                   dtype=tf.int64)
    cols = [fc.indicator_column(col) for col in (a, b, c)]
    lin = fc.linear_model(feats, [a, c], units=2)
    return _run(tf, {"dense": fc.input_layer(feats, cols), "linear": lin}, seed=4)


@case
def weighted_categorical_columns(tf):
    fc = tf.feature_column
    feats = {"w": tf.constant([["paris", "rome"], ["", "oslo"], ["", ""], ["lima", "paris"]]),
             "ww": tf.constant([[0.5, 2.0], [0.0, 3.0], [0.0, 0.0], [4.0, 1.5]]),
             "id": tf.constant([[0, 3], [2, 1], [1, -1], [3, 3]], dtype=tf.int64),
             "iw": tf.constant([[1, 2], [3, 4], [5, 0], [1, 1]], dtype=tf.int64)}
    # TF pairs ids and weights by position: a missing id ('' or -1) has weight 0 there.
    w = fc.weighted_categorical_column(fc.categorical_column_with_vocabulary_list(
        "w", ["paris", "rome", "oslo"], num_oov_buckets=1), "ww")
    i = fc.weighted_categorical_column(fc.categorical_column_with_identity("id", 4), "iw",
                                       dtype=tf.int64)
    dense = fc.input_layer(feats, [fc.indicator_column(w), fc.embedding_column(i, 2)])
    lin = fc.linear_model(feats, [w, i], units=1, sparse_combiner="mean")
    return _run(tf, {"dense": dense, "linear": lin}, seed=5)


@case
def shared_embedding_columns_one_table(tf):
    fc = tf.feature_column
    table = np.arange(15, dtype=np.float32).reshape(5, 3) / 10.0
    feats = {"q": tf.constant([[0, 4], [2, -1], [-1, -1]], dtype=tf.int64),
             "d": tf.constant([[1, 1], [3, 0], [2, -1]], dtype=tf.int64),
             "e": tf.constant([["x"], ["y"], [""]]),
             "ew": tf.constant([[2.0], [0.5], [0.0]])}
    q = fc.categorical_column_with_identity("q", 5)
    d = fc.categorical_column_with_identity("d", 5)
    shared = fc.shared_embedding_columns([q, d], 3, combiner="sum",
                                         initializer=tf.constant_initializer(table))
    e = fc.weighted_categorical_column(fc.categorical_column_with_hash_bucket("e", 4), "ew")
    f = fc.categorical_column_with_hash_bucket("e", 4)
    named = fc.shared_embedding_columns([f, e], 2, shared_embedding_collection_name="words",
                                        initializer=tf.constant_initializer(0.25))
    out = fc.input_layer(feats, shared + named)
    w = tf.get_collection("d_q_shared_embedding")[0]
    g = tf.convert_to_tensor(tf.gradients(tf.reduce_sum(out * out), w)[0])
    return _run(tf, {"out": out, "grad": g})
