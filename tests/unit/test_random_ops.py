"""Random ops: shapes, dtypes, op names, TF1 seed rules and per-session repeatability,
distribution sanity."""
import numpy as np
import pytest

import dtf as tf
from dtf.kernels.reference import REFERENCE


def _runs(tensor, n=2, feed=None):
    """``n`` consecutive runs of ``tensor`` in one fresh session."""
    with tf.Session() as s:
        return [s.run(tensor, feed) for _ in range(n)]


FLOAT_MAKERS = {
    "random_normal": lambda shape, **kw: tf.random_normal(shape, **kw),
    "truncated_normal": lambda shape, **kw: tf.truncated_normal(shape, **kw),
    "random_uniform": lambda shape, **kw: tf.random_uniform(shape, **kw),
}
SAMPLE_OP = {"random_normal": "RandomStandardNormal", "truncated_normal": "TruncatedNormal",
             "random_uniform": "RandomUniform"}


@pytest.mark.parametrize("name", sorted(FLOAT_MAKERS))
@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_shapes_dtypes_and_names(name, dtype):
    t = FLOAT_MAKERS[name]([2, 3], dtype=dtype)
    assert t.op.name == name and t.dtype == dtype and t.shape == tf.TensorShape([2, 3])
    sample = tf.get_default_graph().get_operation_by_name(f"{name}/{SAMPLE_OP[name]}")
    assert sample.type == SAMPLE_OP[name] and sample.get_attr("dtype") == dtype
    v = _runs(t, 1)[0]
    assert v.shape == (2, 3) and v.dtype == dtype.as_numpy_dtype


def test_shape_forms():
    n = tf.placeholder(tf.int32, [])
    assert tf.random_normal(tf.TensorShape([4])).shape == tf.TensorShape([4])
    assert tf.random_uniform([]).shape == tf.TensorShape([])
    t = tf.random_normal(tf.stack([n, 2]))
    assert t.shape.as_list()[1] == 2
    v = _runs(t, 1, {n: 3})[0]
    assert v.shape == (3, 2)


def test_op_seed_repeats_per_session_and_advances_within():
    t = tf.random_normal([5], seed=7)
    first = _runs(t, 2)
    second = _runs(t, 2)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])


def test_seeded_first_run_matches_reference():
    t = tf.random_uniform([4], seed=3)
    sample = t.op.inputs[0].op.inputs[0].op
    got_sample, = _runs(sample.outputs[0], 1)
    want = REFERENCE[sample.type](sample.attrs, np.array([4], np.int32))
    np.testing.assert_array_equal(got_sample, want)


def test_graph_seed_rules():
    tf.set_random_seed(1234)
    assert tf.get_default_graph().seed == 1234
    a = tf.random_normal([3])
    b = tf.random_normal([3])
    va, vb = _runs([a, b], 1)[0]
    assert not np.array_equal(va, vb)  # op seeds come from each op's position
    tf.reset_default_graph()
    tf.set_random_seed(1234)
    a2 = tf.random_normal([3])
    np.testing.assert_array_equal(_runs(a2, 1)[0], va)


def test_get_seed():
    assert tf.get_seed(None) == (None, None)
    assert tf.get_seed(5) == (87654321, 5)
    tf.set_random_seed(3)
    tf.constant(1.0)
    assert tf.get_seed(None) == (3, tf.get_default_graph()._last_id)
    assert tf.get_seed(9) == (3, 9)
    tf.set_random_seed(0)
    assert tf.get_seed(0) == (0, 2 ** 31 - 1)
    assert tf.random.get_seed is tf.get_seed


def test_unseeded_is_nondeterministic():
    t = tf.random_normal([8])
    sample = t.op.inputs[0].op.inputs[0].op
    assert (sample.get_attr("seed"), sample.get_attr("seed2")) == (0, 0)
    assert not np.array_equal(_runs(t, 1)[0], _runs(t, 1)[0])


def test_distribution_sanity():
    n = 20000
    normal, uniform, trunc = _runs([tf.random_normal([n], mean=2.0, stddev=3.0, seed=1),
                                    tf.random_uniform([n], -1.0, 3.0, seed=2),
                                    tf.truncated_normal([n], mean=1.0, stddev=0.5, seed=3)], 1)[0]
    assert abs(normal.mean() - 2.0) < 0.1 and abs(normal.std() - 3.0) < 0.1
    assert uniform.min() >= -1.0 and uniform.max() < 3.0
    assert abs(uniform.mean() - 1.0) < 0.05 and abs(uniform.std() - 4 / np.sqrt(12)) < 0.05
    assert np.all(np.abs(trunc - 1.0) <= 2 * 0.5)
    assert abs(trunc.mean() - 1.0) < 0.02 and abs(trunc.std() - 0.5 * 0.8796) < 0.02


def test_random_uniform_int():
    t = tf.random_uniform([1000], minval=-3, maxval=4, dtype=tf.int64, seed=1)
    assert t.op.type == "RandomUniformInt" and t.op.name == "random_uniform" and t.dtype == tf.int64
    v = _runs(t, 1)[0]
    assert v.dtype == np.int64 and set(v.tolist()) == set(range(-3, 4))
    with pytest.raises(ValueError, match="Must specify maxval for integer dtype"):
        tf.random_uniform([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="Invalid dtype"):
        tf.random_uniform([2], dtype=tf.uint8)
    bad = tf.random_uniform([2], minval=5, maxval=5, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Need minval < maxval: 5 >= 5"):
        _runs(bad, 1)


def test_float_dtype_required():
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.random_normal([2], dtype=tf.int32)


def test_negative_runtime_shape_is_invalid_argument():
    s = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        _runs(tf.random_normal(s), 1, {s: [2, -1]})


def test_random_shuffle():
    x = np.arange(20).reshape(10, 2)
    t = tf.random_shuffle(x, seed=5)
    assert t.op.name == "RandomShuffle" and t.shape == tf.TensorShape([10, 2])
    first, second = _runs(t, 2)
    for v in (first, second):
        np.testing.assert_array_equal(v[np.argsort(v[:, 0])], x)  # rows kept whole
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(_runs(t, 1)[0], first)


def test_multinomial_and_categorical():
    logits = np.log(np.array([[0.2, 0.8, 0.0], [1.0, 0.0, 0.0]], np.float32) + 1e-30)
    t = tf.multinomial(logits, 4000, seed=4)
    assert t.op.name == "multinomial/Multinomial" and t.dtype == tf.int64
    assert t.shape.as_list() == [2, 4000]
    v = _runs(t, 1)[0]
    assert abs((v[0] == 1).mean() - 0.8) < 0.03 and not (v[0] == 2).any()
    assert (v[1] == 0).all()
    c = tf.random.categorical(logits, 3, dtype=tf.int32, seed=1)
    assert c.op.name == "categorical/Multinomial" and c.dtype == tf.int32


def test_random_namespace_and_not_differentiable():
    assert tf.random.normal is tf.random_normal and tf.random.uniform is tf.random_uniform
    assert tf.random.shuffle is tf.random_shuffle and tf.random.set_random_seed is tf.set_random_seed
    m = tf.placeholder(tf.float32, [])
    y = tf.random_normal([3], mean=m)
    g, = tf.gradients(y, m)
    with tf.Session() as s:
        assert s.run(g, {m: 0.0}) == pytest.approx(3.0)
    shape = tf.placeholder(tf.float32, [2])
    assert tf.gradients(tf.random_shuffle(shape), shape) == [None]
