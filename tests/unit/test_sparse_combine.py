"""tf.sparse reshape / add / concat: the errors TF raises for bad input (values and
gradients are checked against TensorFlow in tests/goldens/cases_sparse.py)."""
import numpy as np
import pytest

import dtf as tf


def _sp(indices, values, shape):
    return tf.SparseTensor(np.asarray(indices, np.int64), np.asarray(values, np.float32),
                           np.asarray(shape, np.int64))


def test_add_of_two_dense_tensors_is_a_type_error():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
            tf.sparse.add(tf.constant([1.0]), tf.constant([2.0]))


def test_add_of_mismatched_shapes_names_the_dimension():
    with tf.Graph().as_default():
        a = _sp([[0, 0]], [1], [2, 3])
        b = tf.SparseTensor(np.array([[0, 0]], np.int64), np.array([1], np.float32),
                            tf.placeholder(tf.int64, [2]))
        out = tf.sparse.add(a, b)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="dimension 1"):
                sess.run(out.values, {b.dense_shape: [2, 4]})


def test_static_reshape_size_mismatch_is_a_value_error():
    with tf.Graph().as_default():
        sp = _sp([[0, 1]], [1], [2, 3])
        with pytest.raises(ValueError, match="Cannot reshape a tensor with 6 elements"):
            tf.sparse.reshape(sp, [4, 2])
        with pytest.raises(ValueError, match="At most one dimension"):
            tf.sparse.reshape(sp, [-1, -1])


def test_reshape_of_a_fed_shape_with_a_bad_size_fails_at_run_time():
    with tf.Graph().as_default():
        sp = _sp([[0, 1]], [1], [2, 3])
        shape = tf.placeholder(tf.int64, [2])
        out = tf.sparse.reshape(sp, shape)
        with tf.Session() as sess:
            assert sess.run(out.indices, {shape: [-1, 2]}).tolist() == [[0, 1]]
            with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of 4"):
                sess.run(out.indices, {shape: [-1, 4]})


def test_concat_of_mismatched_shapes_names_the_position():
    with tf.Graph().as_default():
        out = tf.sparse.concat(0, [_sp([[0, 0]], [1], [1, 2]), _sp([[0, 0]], [2], [1, 3])])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match="expected 2 for dimension 1 but got 3 at position 1"):
                sess.run(out.values)


def test_concat_of_one_input_is_that_input_and_dense_input_is_a_type_error():
    with tf.Graph().as_default():
        sp = _sp([[0, 0]], [1], [1, 2])
        assert tf.sparse.concat(1, [sp]) is sp
        with pytest.raises(TypeError, match="sp_inputs\\[1\\]"):
            tf.sparse.concat(1, [sp, tf.constant([[1.0]])])


def test_sparse_values_fed_through_add_and_concat():
    with tf.Graph().as_default():
        a = tf.sparse_placeholder(tf.float32, shape=[2, 2])
        b = _sp([[1, 1]], [5], [2, 2])
        total = tf.sparse.add(a, b)
        both = tf.sparse.concat(1, [a, b])
        with tf.Session() as sess:
            fed = tf.SparseTensorValue([[0, 1], [1, 1]], [1.0, 2.0], [2, 2])
            got, cat = sess.run([total, both], {a: fed})
        assert got.indices.tolist() == [[0, 1], [1, 1]] and got.values.tolist() == [1.0, 7.0]
        assert cat.dense_shape.tolist() == [2, 4]
        assert cat.indices.tolist() == [[0, 1], [1, 1], [1, 3]]
