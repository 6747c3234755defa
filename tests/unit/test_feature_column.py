"""tf.feature_column: TF's argument checks and the rules the goldens do not show (the
values themselves are in tests/goldens/cases_feature_column.py)."""
import numpy as np
import pytest

import dtf as tf
from dtf.framework.farmhash import fingerprint64, fingerprint_cat64

fc = tf.feature_column


def test_fingerprint64_known_values():
    # Values from TF's tf.fingerprint (farmhash Fingerprint64), little-endian.
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F
    assert fingerprint64(b"a" * 100) == fingerprint64(bytes(b"a" * 100))
    assert fingerprint_cat64(1, 2) != fingerprint_cat64(2, 1)


@pytest.mark.parametrize("make, message", [
    (lambda: fc.categorical_column_with_hash_bucket("a", 0), "hash_bucket_size must be at least 1"),
    (lambda: fc.categorical_column_with_vocabulary_list("a", ["x", "x"]), "Duplicate keys"),
    (lambda: fc.categorical_column_with_vocabulary_list("a", ["x"], default_value=0,
                                                        num_oov_buckets=1), "Can't specify both"),
    (lambda: fc.categorical_column_with_identity("a", 3, default_value=3), "not in range"),
    (lambda: fc.bucketized_column(fc.numeric_column("a"), [2.0, 1.0]), "sorted list"),
    (lambda: fc.bucketized_column(fc.categorical_column_with_identity("a", 2), [1.0]),
     "numeric_column"),
    (lambda: fc.crossed_column(["a"], 10), "length > 1"),
    (lambda: fc.crossed_column([fc.categorical_column_with_hash_bucket("a", 5), "b"], 10),
     "not supported for crossing"),
    (lambda: fc.embedding_column(fc.categorical_column_with_identity("a", 2), 0),
     "Invalid dimension"),
    (lambda: fc.embedding_column(fc.categorical_column_with_identity("a", 2), 2, max_norm=1.0),
     "max_norm"),
    (lambda: fc.indicator_column(fc.numeric_column("a")), "_CategoricalColumn"),
])
def test_constructor_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_input_layer_refuses_categorical_and_duplicates():
    with tf.Graph().as_default():
        feats = {"a": tf.constant([[1]], dtype=tf.int64)}
        with pytest.raises(ValueError, match="must be a _DenseColumn"):
            fc.input_layer(feats, [fc.categorical_column_with_identity("a", 3)])
        with pytest.raises(ValueError, match="Duplicate feature column name"):
            fc.input_layer(feats, [fc.numeric_column("a"), fc.numeric_column("a")])
        with pytest.raises(ValueError, match="Feature b is not in features dictionary"):
            fc.input_layer(feats, [fc.numeric_column("b")])


def test_identity_out_of_range_without_default_is_an_error():
    with tf.Graph().as_default():
        out = fc.input_layer({"a": tf.constant([[5]], dtype=tf.int64)},
                             [fc.indicator_column(fc.categorical_column_with_identity("a", 3))])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(out)


def test_columns_are_values_and_input_layer_trains_embeddings():
    c = fc.categorical_column_with_identity("a", 4)
    assert c == fc.categorical_column_with_identity("a", 4) and len({c, c}) == 1
    with tf.Graph().as_default():
        cols_to_vars = {}
        emb = fc.embedding_column(c, 2, initializer=tf.ones_initializer())
        out = fc.input_layer({"a": tf.constant([[1], [3]], dtype=tf.int64)}, [emb],
                             cols_to_vars=cols_to_vars)
        (table,) = cols_to_vars[emb]
        assert table.name == "input_layer/a_embedding/embedding_weights:0"
        step = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(out))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            got = sess.run(table)
        np.testing.assert_allclose(got[:, 0], [1.0, 0.5, 1.0, 0.5])


@pytest.mark.parametrize("kind", ["string", "int"])
def test_large_vocabulary_lookup_matches_a_dict(kind):
    rng = np.random.RandomState(5)
    words = rng.permutation(20000)[:5000]
    vocab = [f"w{w}" for w in words] if kind == "string" else [int(w) * 7 - 3 for w in words]
    probe = np.concatenate([rng.choice(np.asarray(vocab, dtype=object), 300),
                            np.asarray(["nope", "w-1"] if kind == "string" else [-100, 10 ** 9],
                                       dtype=object)])
    probe = probe.astype(str) if kind == "string" else probe.astype(np.int64)
    want = np.asarray([{v: i for i, v in enumerate(vocab)}.get(
        p if kind == "string" else int(p), len(vocab)) for p in probe])
    from dtf.feature_column.layers import LazyBuilder

    with tf.Graph().as_default():
        col = fc.categorical_column_with_vocabulary_list("v", vocab, default_value=len(vocab))
        ids = LazyBuilder({"v": tf.constant(probe)}).get(col).values
        with tf.Session() as sess:
            got = sess.run(ids)
    np.testing.assert_array_equal(got, want)
