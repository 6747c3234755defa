"""VarLenFeature parsing into tf.SparseTensor beyond the TF goldens (cases_data.py): errors,
and a dataset refusing sparse components instead of mangling them."""
import numpy as np
import pytest

import dtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _example(**features):
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def _ints(*values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def test_var_len_feature_parses_a_batch_into_a_sparse_tensor():
    s = tf.placeholder(tf.string, [None])
    parsed = tf.parse_example(s, {"v": tf.io.VarLenFeature(tf.int64)})["v"]
    assert isinstance(parsed, tf.SparseTensor)
    with tf.Session() as sess:
        value, dense = sess.run([parsed, tf.sparse.to_dense(parsed)],
                                {s: [_example(v=_ints(4, 5)), _example(), _example(v=_ints(6))]})
    np.testing.assert_array_equal(value.indices, [[0, 0], [0, 1], [2, 0]])
    np.testing.assert_array_equal(value.values, [4, 5, 6])
    np.testing.assert_array_equal(value.dense_shape, [3, 2])
    np.testing.assert_array_equal(dense, [[4, 5], [0, 0], [6, 0]])


def test_a_var_len_feature_of_the_wrong_type_is_an_invalid_argument():
    s = tf.placeholder(tf.string, [])
    parsed = tf.parse_single_example(s, {"v": tf.VarLenFeature(tf.float32)})["v"]
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Feature: v"):
            sess.run(parsed.values, {s: _example(v=_ints(1))})


def test_a_var_len_feature_of_an_unparseable_dtype_is_refused():
    with pytest.raises(ValueError, match="'v': dtype int32"):
        tf.parse_example(tf.constant([b""]), {"v": tf.VarLenFeature(tf.int32)})


def test_a_sliced_record_keeps_its_trailing_nul_bytes():
    # An empty packed list serializes as a zero length: the record ends in a NUL byte.
    record = _example(v=_ints())
    assert record.endswith(b"\x00")
    s = tf.placeholder(tf.string, [None])
    parsed = tf.parse_single_example(s[0], {"v": tf.VarLenFeature(tf.int64)})["v"]
    with tf.Session() as sess:
        assert sess.run(s[0], {s: [record]}) == record
        assert sess.run(parsed.dense_shape, {s: [record]}).tolist() == [0]


def test_a_dataset_map_returning_a_sparse_tensor_is_refused():
    ds = tf.data.Dataset.from_tensor_slices([_example(v=_ints(1, 2))])
    with pytest.raises(TypeError, match="SparseTensor"):
        ds.map(lambda r: tf.parse_single_example(r, {"v": tf.VarLenFeature(tf.int64)}))
