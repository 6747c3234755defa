import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

rng = np.random.default_rng(0)
A345 = np.arange(60, dtype=np.float32).reshape(3, 4, 5)


def _eval(t, feed=None):
    return run(t, feed)


# -- forward -------------------------------------------------------------------------------
@pytest.mark.parametrize("build,want", [
    (lambda x: tf.transpose(x), A345.T),
    (lambda x: tf.transpose(x, [1, 0, 2]), A345.transpose(1, 0, 2)),
    (lambda x: tf.concat([x, x], -1), np.concatenate([A345, A345], -1)),
    (lambda x: tf.stack([x, x], axis=-1), np.stack([A345, A345], -1)),
    (lambda x: tf.unstack(x, axis=-2)[1], A345[:, 1]),
    (lambda x: tf.split(x, 2, axis=1)[1], A345[:, 2:]),
    (lambda x: tf.split(x, [1, -1, 2], axis=-1)[1], A345[..., 1:3]),
    (lambda x: tf.slice(x, [1, 0, 2], [-1, 2, 3]), A345[1:, 0:2, 2:5]),
    (lambda x: tf.strided_slice(x, [0, 3], [3, 0], [2, -1]), A345[0:3:2, 3:0:-1]),
    (lambda x: tf.gather(x, [[2, 0], [1, 1]], axis=-2), np.take(A345, [[2, 0], [1, 1]], axis=1)),
    (lambda x: tf.expand_dims(x, -1), A345[..., None]),
    (lambda x: tf.squeeze(x[:, :1, None], axis=[1]), A345[:, 0, None]),
    (lambda x: tf.tile(x, [2, 1, 3]), np.tile(A345, [2, 1, 3])),
    (lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]]), np.pad(A345, [[1, 0], [0, 2], [1, 1]])),
    (lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]], constant_values=7.0),
     np.pad(A345, [[1, 0], [0, 2], [1, 1]], constant_values=7)),
    (lambda x: tf.pad(x, [[1, 2], [2, 3], [0, 4]], "REFLECT"),
     np.pad(A345, [[1, 2], [2, 3], [0, 4]], "reflect")),
    (lambda x: tf.pad(x, [[3, 2], [0, 4], [1, 1]], "symmetric"),
     np.pad(A345, [[3, 2], [0, 4], [1, 1]], "symmetric")),
    (lambda x: tf.reverse(x, [0, -1]), A345[::-1, :, ::-1]),
    (lambda x: tf.reshape(x, [-1, 10]), A345.reshape(-1, 10)),
    (lambda x: tf.broadcast_to(x[:, :1], [3, 4, 5]), np.broadcast_to(A345[:, :1], (3, 4, 5))),
])
def test_forward_matches_numpy(build, want):
    x = tf.placeholder(tf.float32, [3, 4, 5])
    out = build(x)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(_eval(out, {x: A345}), want)
    check_against_reference(out, {x: A345})


@pytest.mark.parametrize("key", [
    (slice(1, None), slice(None, None, 2), None, Ellipsis, -1),
    (Ellipsis, 1), (-1, slice(None, None, -2)), (slice(-3, -1), slice(None), slice(4, 0, -2)),
    (None, 0, None), 2, (slice(None, None, -1),),
])
def test_getitem_matches_numpy(key):
    x = tf.placeholder(tf.float32, [3, 4, 5])
    y = x[key]
    want = A345[key]
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(_eval(y, {x: A345}), want)


def test_getitem_tensor_index_and_unknown_dims():
    x = tf.placeholder(tf.float32, [None, 4, None])
    i = tf.placeholder(tf.int32, [])
    y = x[i, 1:, ::2]
    assert y.shape.as_list() == [3, None]
    assert y.op.type == "StridedSlice" and y.op.name == "strided_slice"
    np.testing.assert_array_equal(_eval(y, {x: A345, i: 2}), A345[2, 1:, ::2])
    with pytest.raises(TypeError):
        x[1.5]


def test_names_and_types():
    x = tf.constant(A345)
    assert tf.transpose(x).op.name == "transpose"
    assert tf.concat([x, x], 0).op.type == "ConcatV2"
    assert tf.stack([x, x]).op.name == "stack"
    assert tf.gather(x, [0]).op.type == "GatherV2"
    assert tf.split(x, 3)[0].op.type == "Split" and tf.split(x, [1, 2])[0].op.type == "SplitV"
    assert tf.pad(x, [[0, 0]] * 3, "REFLECT").op.type == "MirrorPad"
    assert tf.range(5).op.name == "range"
    assert tf.stop_gradient(x).op.type == "StopGradient"
    assert tf.convert_to_tensor([x[0, 0, 0], 1.0]).op.name == "packed"


def test_unknown_shapes_propagate():
    x = tf.placeholder(tf.float32, [None, 3])
    assert tf.concat([x, x], 0).shape.as_list() == [None, 3]
    assert tf.concat([x, x], 1).shape.as_list() == [None, 6]
    assert tf.stack([x, x], 1).shape.as_list() == [None, 2, 3]
    assert tf.transpose(x).shape.as_list() == [3, None]
    assert tf.reshape(x, [-1]).shape.as_list() == [None]
    assert tf.gather(x, tf.placeholder(tf.int32, [None, 2])).shape.as_list() == [None, 2, 3]
    assert tf.tile(x, [2, 2]).shape.as_list() == [None, 6]
    assert tf.expand_dims(x, 0).shape.as_list() == [1, None, 3]
    assert tf.squeeze(x).shape.ndims is None
    assert tf.one_hot(tf.placeholder(tf.int32, [None]), 4).shape.as_list() == [None, 4]
    u = tf.placeholder(tf.float32)
    assert tf.transpose(u, [1, 0]).shape.as_list() == [None, None]
    assert tf.range(tf.placeholder(tf.int32, [])).shape.as_list() == [None]


def test_one_hot_range_size_rank_where():
    oh = tf.one_hot([0, 2, -1, 5], 3, on_value=5, off_value=1, axis=0)
    assert oh.dtype == tf.int32
    np.testing.assert_array_equal(_eval(oh), np.array([[5, 1, 1, 1], [1, 1, 1, 1], [1, 5, 1, 1]]))
    assert tf.one_hot([1], 2).dtype == tf.float32
    assert tf.range(1, 7, 2).dtype == tf.int32 and tf.range(1, 2.5, 0.5).dtype == tf.float32
    np.testing.assert_allclose(_eval(tf.range(1, 2.5, 0.5)), [1, 1.5, 2])
    np.testing.assert_array_equal(_eval(tf.range(5, 0, -2)), [5, 3, 1])
    x = tf.placeholder(tf.float32, [None, 3])
    feed = {x: np.ones((4, 3))}
    assert _eval([tf.size(x), tf.rank(x), tf.shape(x)], feed)[0] == 12
    assert tf.rank(x).op.type == "Const" and tf.size(x).op.type == "Size"
    w = tf.where([[True, False], [False, True]])
    assert w.dtype == tf.int64 and w.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(_eval(w), [[0, 0], [1, 1]])


def test_boolean_mask_and_sequence_mask():
    x = tf.constant(A345)
    m = np.array([True, False, True])
    np.testing.assert_array_equal(_eval(tf.boolean_mask(x, m)), A345[m])
    np.testing.assert_array_equal(_eval(x[tf.constant(m)]), A345[m])
    m2 = A345[0] > 7
    np.testing.assert_array_equal(_eval(tf.boolean_mask(x, m2, axis=1)), A345[:, m2])
    np.testing.assert_array_equal(_eval(tf.sequence_mask([1, 3], 4)), [[1, 0, 0, 0], [1, 1, 1, 0]])


def test_zeros_ones_fill():
    assert tf.zeros([2, 2], tf.bool).dtype == tf.bool
    assert tf.zeros([40, 40]).op.type == "Fill"
    n = tf.placeholder(tf.int32, [])
    np.testing.assert_array_equal(_eval(tf.ones([n, 2], tf.int32), {n: 2}), np.ones((2, 2)))
    np.testing.assert_array_equal(_eval(tf.zeros_like([[1, 2]])), [[0, 0]])


# -- errors --------------------------------------------------------------------------------
def test_construction_errors():
    with pytest.raises(ValueError, match="rank"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([2, 3, 1])], 0)
    with pytest.raises(ValueError, match="Dimension 0"):
        tf.concat([tf.zeros([2, 3]), tf.zeros([3, 3])], 1)
    with pytest.raises(ValueError, match="Cannot reshape"):
        tf.reshape(tf.zeros([2, 3]), [4])
    with pytest.raises(ValueError, match="squeeze"):
        tf.squeeze(tf.zeros([2, 3]), axis=[1])
    with pytest.raises(ValueError, match="divisible"):
        tf.split(tf.zeros([5]), 2)
    with pytest.raises(ValueError):
        tf.zeros([2, 3])[5]
    with pytest.raises(ValueError):
        tf.expand_dims(tf.zeros([2]), 3)
    with pytest.raises(ValueError):
        tf.pad(tf.zeros([2]), [[1, 1]], "WRAP")


def test_runtime_errors():
    idx = tf.placeholder(tf.int32, [None])
    g = tf.gather(tf.zeros([3, 2]), idx)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in \[0, 3\)"):
        _eval(g, {idx: [0, 7]})
    s = tf.placeholder(tf.int32, [None])
    r = tf.reshape(tf.zeros([2, 3]), s)
    with pytest.raises(tf.errors.InvalidArgumentError, match="reshape"):
        _eval(r, {s: [4]})
    n = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="delta != 0"):
        _eval(tf.range(0, 5, n), {n: 0})


# -- gradients -----------------------------------------------------------------------------
X = rng.normal(size=(3, 4, 2))


@pytest.mark.parametrize("build", [
    lambda x: tf.reshape(x, [4, -1]) * np.arange(24.0).reshape(4, 6),
    lambda x: tf.transpose(x, [2, 0, 1]) * np.arange(24.0).reshape(2, 3, 4),
    lambda x: tf.transpose(x) * np.arange(24.0).reshape(2, 4, 3),
    lambda x: tf.concat([x, 2.0 * x[:, :1]], 1) ** 2,
    lambda x: tf.stack([x, x * x], axis=1) * 1.5,
    lambda x: tf.unstack(x, axis=1)[2] * tf.unstack(x, axis=1)[0],
    lambda x: tf.split(x, 2, axis=1)[1] ** 2,
    lambda x: tf.split(x, [1, -1], axis=-1)[0] ** 3,
    lambda x: tf.slice(x, [1, 1, 0], [2, -1, 1]) ** 2,
    lambda x: x[1:, ::-2, tf.newaxis, ..., -1] ** 2,
    lambda x: tf.gather(x, [2, 0, 2], axis=0) ** 2,
    lambda x: tf.gather(x, [[1, 3], [1, 1]], axis=1) ** 2,
    lambda x: tf.gather(x, [1, 1], axis=-1) ** 2,
    lambda x: tf.expand_dims(x, 1) ** 2,
    lambda x: tf.squeeze(x[:, :1], [1]) ** 2,
    lambda x: tf.tile(x, [1, 2, 3]) ** 2,
    lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]]) ** 2,
    lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]], constant_values=3.0) ** 2,
    lambda x: tf.pad(x, [[2, 1], [3, 0], [1, 1]], "REFLECT") * np.arange(168.0).reshape(6, 7, 4),
    lambda x: tf.pad(x, [[2, 3], [1, 4], [0, 2]], "SYMMETRIC") * np.arange(288.0).reshape(8, 9, 4),
    lambda x: tf.reverse(x, [1]) * np.arange(24.0).reshape(3, 4, 2),
    lambda x: tf.broadcast_to(x[:, :1], [3, 4, 2]) ** 2,
    lambda x: tf.fill([2, 2], tf.reduce_sum(x)) ** 2,
    lambda x: tf.boolean_mask(x, np.array([True, False, True])) ** 2,
    lambda x: tf.identity(x) * 2.0,
])
def test_gradients(build):
    check_gradient(build, [X])


def test_gradients_with_unknown_dims():
    def build(x):
        x = tf.placeholder_with_default(x, [None, None, 2])
        parts = [tf.concat([x, x], 0), tf.tile(x, [2, 1, 1]), tf.slice(x, [1, 0, 0], [-1, 2, -1]),
                 x[1:, ::2], tf.gather(x, [0, 2]), tf.reshape(x, [-1, 2]), tf.transpose(x),
                 tf.pad(x, [[1, 1], [0, 0], [0, 1]])]
        return tf.add_n([tf.reduce_sum(p * p) for p in parts])

    check_gradient(build, [X])


def test_stop_gradient_blocks():
    x = tf.placeholder(tf.float32, [2])
    assert tf.gradients(tf.reduce_sum(tf.stop_gradient(x) * 3.0), x) == [None]


def test_static_shapes_evaluate_shape_arithmetic_over_constants():
    """As TF's shape inference: a slice sized by stack([shape(y)[0], -1]) has a static shape,
    and tf.shape of it is a constant; the values are those of the ops run."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [6, 4])
        y = tf.placeholder(tf.int64, [3, 1])
        flat = tf.reshape(y, [-1])
        part = tf.slice(x, [0, 0], tf.stack([tf.shape(flat)[0], -1]))
        rest = tf.slice(x, tf.stack([tf.shape(flat)[0], 0]), [-1, -1])
        tail = tf.reshape(part, tf.concat([[-1, 1], tf.shape(part)[1:2]], 0))
        assert part.shape.as_list() == [3, 4] and rest.shape.as_list() == [3, 4]
        assert tail.shape.as_list() == [3, 1, 4]
        assert tf.shape(part).op.type == "Const"
        xv = np.arange(24, dtype=np.float32).reshape(6, 4)
        with tf.Session() as sess:
            p, r, t = sess.run([part, rest, tail], {x: xv, y: np.zeros((3, 1), np.int64)})
        np.testing.assert_array_equal(p, xv[:3])
        np.testing.assert_array_equal(r, xv[3:])
        np.testing.assert_array_equal(t, xv[:3].reshape(3, 1, 4))
