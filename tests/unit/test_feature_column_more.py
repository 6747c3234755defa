"""tf.feature_column's vocabulary-file, weighted and shared-embedding columns: TF's argument
checks and the rules the goldens do not show (values: tests/goldens/cases_feature_column.py)."""
import numpy as np
import pytest

import dtf as tf

fc = tf.feature_column


def vocab_file(tmp_path, text, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def dense(features, columns):
    with tf.Session() as sess:
        out = fc.input_layer(features, columns)
        sess.run(tf.global_variables_initializer())
        return sess.run(out)


def test_vocabulary_file_size_lines_and_errors(tmp_path):
    path = vocab_file(tmp_path, "paris\r\nrome\n\noslo\n")   # \r\n ends a line, as in TF
    col = fc.categorical_column_with_vocabulary_file("a", path)
    assert col.vocabulary_size == 4 and col._num_buckets == 4 and col.default_value == -1
    with tf.Graph().as_default():
        out = dense({"a": tf.constant([["rome"], ["oslo"], ["paris"], ["lyon"]])},
                    [fc.indicator_column(col)])
    np.testing.assert_array_equal(out.argmax(1), [1, 3, 0, 0])
    assert out[3].sum() == 0   # unknown and no default: no id at all
    cases = [(dict(vocabulary_file=""), "Missing vocabulary_file in a"),
             (dict(vocabulary_file=str(tmp_path / "none.txt")), "does not exist"),
             (dict(vocabulary_file=path, vocabulary_size=0), "Invalid vocabulary_size in a"),
             (dict(vocabulary_file=path, num_oov_buckets=1, default_value=0),
              "Can't specify both"),
             (dict(vocabulary_file=path, num_oov_buckets=-1), "Invalid num_oov_buckets"),
             (dict(vocabulary_file=path, dtype=tf.float32), "dtype must be string or integer")]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            fc.categorical_column_with_vocabulary_file("a", **kwargs)
    too_big = fc.categorical_column_with_vocabulary_file("a", path, vocabulary_size=9)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Invalid vocab_size"):
        fc.input_layer({"a": tf.constant([["x"]])}, [fc.indicator_column(too_big)])
    dup = fc.categorical_column_with_vocabulary_file("a", vocab_file(tmp_path, "x\nx\n", "d"))
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Duplicate keys"):
        fc.input_layer({"a": tf.constant([["x"]])}, [fc.indicator_column(dup)])
    ints = fc.categorical_column_with_vocabulary_file("n", vocab_file(tmp_path, "5\nz\n", "i"),
                                                      dtype=tf.int64)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="integer column n"):
        fc.input_layer({"n": tf.constant([[5]], dtype=tf.int64)}, [fc.indicator_column(ints)])


def test_weighted_column_name_spec_and_errors():
    ids = fc.categorical_column_with_identity("id", 4)
    w = fc.weighted_categorical_column(ids, "wt")
    assert w.name == "id_weighted_by_wt" and w._num_buckets == 4
    spec = fc.make_parse_example_spec([w])
    assert spec["wt"] == tf.VarLenFeature(tf.float32) and spec["id"] == tf.VarLenFeature(tf.int64)
    with pytest.raises(ValueError, match="Parse config .* already exists for id"):
        fc.make_parse_example_spec([fc.weighted_categorical_column(ids, "id")])
    with pytest.raises(ValueError, match="is not convertible to float"):
        fc.weighted_categorical_column(ids, "wt", dtype=tf.string)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Bad dtype, expected"):
        fc.linear_model({"id": tf.constant([[1]], dtype=tf.int64),
                         "wt": tf.constant([[1]], dtype=tf.int64)}, [w])
    with tf.Graph().as_default(), pytest.raises(ValueError, match="Feature wt is not in"):
        fc.linear_model({"id": tf.constant([[1]], dtype=tf.int64)}, [w])


def test_shared_embedding_columns_share_one_table_and_check_their_columns():
    a = fc.categorical_column_with_identity("a", 3)
    b = fc.categorical_column_with_identity("b", 3)
    cols = fc.shared_embedding_columns([b, a], 2, initializer=tf.ones_initializer())
    assert [c.name for c in cols] == ["b_shared_embedding", "a_shared_embedding"]
    assert {c.shared_embedding_collection_name for c in cols} == {"a_b_shared_embedding"}
    with tf.Graph().as_default():
        out = dense({"a": tf.constant([[0]], dtype=tf.int64),
                     "b": tf.constant([[2]], dtype=tf.int64)}, cols)
        assert [v.name for v in tf.global_variables()] == [
            "input_layer/a_b_shared_embedding/embedding_weights:0"]
        np.testing.assert_array_equal(out, [[1, 1, 1, 1]])
        # a second input_layer in the graph finds the table through the collection
        fc.input_layer({"a": tf.constant([[1]], dtype=tf.int64)}, cols[1:])
        assert len(tf.global_variables()) == 1
        with pytest.raises(ValueError, match="unexpected shape"):
            fc.input_layer({"a": tf.constant([[1]], dtype=tf.int64)}, fc.shared_embedding_columns(
                [a, b], 5, shared_embedding_collection_name="a_b_shared_embedding"))
    cases = [(lambda: fc.shared_embedding_columns([a, fc.categorical_column_with_hash_bucket(
                  "h", 3)], 2), "must have the same type"),
             (lambda: fc.shared_embedding_columns([a, fc.categorical_column_with_identity(
                  "c", 4)], 2), "same number of buckets"),
             (lambda: fc.shared_embedding_columns([a, b], 0), "Invalid dimension"),
             (lambda: fc.shared_embedding_columns([a, b], 2, max_norm=1.0), "max_norm"),
             (lambda: fc.shared_embedding_columns([a, b], 2, ckpt_to_load_from="x"),
              "Must specify both"),
             (lambda: fc.shared_embedding_columns([fc.numeric_column("0"), a], 2),
              "must be subclasses of _CategoricalColumn")]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def test_dnn_classifier_trains_on_shared_and_weighted_columns(tmp_path):
    q = fc.categorical_column_with_identity("q", 4)
    d = fc.weighted_categorical_column(fc.categorical_column_with_identity("d", 4), "dw")
    columns = fc.shared_embedding_columns([q, d], 3)
    rng = np.random.RandomState(0)
    x = {"q": rng.randint(0, 4, (64, 2)).astype(np.int64),
         "d": rng.randint(0, 4, (64, 2)).astype(np.int64),
         "dw": rng.uniform(0.5, 2.0, (64, 2)).astype(np.float32)}
    y = (x["q"][:, 0] == x["d"][:, 0]).astype(np.int64)
    est = tf.estimator.DNNClassifier([8], columns, model_dir=str(tmp_path))
    est.train(tf.estimator.inputs.numpy_input_fn(x, y, batch_size=16, num_epochs=2,
                                                 shuffle=False))
    table = ("dnn/input_from_feature_columns/input_layer/d_weighted_by_dw_q_shared_embedding/"
             "embedding_weights")
    assert [n for n in est.get_variable_names() if n.endswith("embedding_weights")] == [table]
    assert est.get_variable_value(table).shape == (4, 3)   # one table for both columns
