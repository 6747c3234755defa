"""tf.data transformations: each one's elements, structure and errors, run through real
iterators in a local session."""
from __future__ import annotations

import os

import numpy as np
import pytest

import dtf as tf

Dataset = tf.data.Dataset


def collect(dataset, feed=None, initializable=False):
    """Every element of ``dataset`` (structures of numpy values) until OutOfRangeError."""
    with tf.Graph().as_default():
        ds = dataset() if callable(dataset) else dataset
        it = ds.make_initializable_iterator() if initializable else ds.make_one_shot_iterator()
        nxt = it.get_next()
        out = []
        with tf.Session() as sess:
            if initializable:
                sess.run(it.initializer, feed)
            while True:
                try:
                    out.append(sess.run(nxt))
                except tf.errors.OutOfRangeError:
                    return out


def ints(values):
    return [int(v) for v in values]


def test_from_tensor_slices_map_batch():
    got = collect(lambda: Dataset.from_tensor_slices(np.arange(10)).map(lambda x: x * 2).batch(4))
    assert [list(b) for b in got] == [[0, 2, 4, 6], [8, 10, 12, 14], [16, 18]]


def test_structures_and_output_types():
    with tf.Graph().as_default():
        ds = Dataset.from_tensor_slices({"a": np.zeros((5, 3), np.float32), "b": np.arange(5)})
        assert ds.output_types == {"a": tf.float32, "b": tf.int64}
        assert ds.output_shapes["a"].as_list() == [3]
        assert ds.output_classes == {"a": tf.Tensor, "b": tf.Tensor}
        b = ds.batch(2)
        assert b.output_shapes["a"].as_list() == [None, 3]
        assert ds.batch(2, drop_remainder=True).output_shapes["a"].as_list() == [2, 3]
    got = collect(lambda: Dataset.from_tensor_slices({"a": np.arange(3), "b": np.arange(3) * 10})
                  .map(lambda d: {"s": d["a"] + d["b"], "p": (d["a"], d["b"])}))
    assert [int(e["s"]) for e in got] == [0, 11, 22]
    assert [tuple(int(v) for v in e["p"]) for e in got] == [(0, 0), (1, 10), (2, 20)]


def test_from_tensors_range_zip_concatenate():
    assert [list(e) for e in collect(lambda: Dataset.from_tensors([1, 2, 3]))] == [[1, 2, 3]]
    assert ints(collect(lambda: Dataset.range(2, 11, 3))) == [2, 5, 8]
    assert ints(collect(lambda: Dataset.range(5))) == [0, 1, 2, 3, 4]
    got = collect(lambda: Dataset.zip((Dataset.range(3), Dataset.range(10, 20))))
    assert [(int(a), int(b)) for a, b in got] == [(0, 10), (1, 11), (2, 12)]
    assert ints(collect(lambda: Dataset.range(2).concatenate(Dataset.range(5, 7)))) == [0, 1, 5, 6]
    with tf.Graph().as_default():
        with pytest.raises(TypeError):
            Dataset.range(2).concatenate(Dataset.from_tensors(1.0))


def test_filter_flat_map_interleave():
    assert ints(collect(lambda: Dataset.range(10).filter(lambda x: tf.equal(x % 3, 0)))) == [0, 3, 6, 9]
    got = collect(lambda: Dataset.range(1, 4).flat_map(
        lambda x: Dataset.from_tensors(x).repeat(x)))
    assert ints(got) == [1, 2, 2, 3, 3, 3]
    # TF's documented example: cycle_length=2, block_length=4 over 1..5 repeated 6 times.
    got = collect(lambda: Dataset.range(1, 6).interleave(
        lambda x: Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4))
    assert ints(got) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                         5, 5, 5, 5, 5, 5]


def test_map_captures_outer_tensors_and_placeholders():
    def build():
        scale = tf.placeholder(tf.int64, [], name="scale")
        offset = tf.constant(100, tf.int64)
        build.scale = scale
        return Dataset.range(3).map(lambda x: offset + x * scale)
    with tf.Graph().as_default():
        ds = build()
        it = ds.make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer, {build.scale: 2})
            assert [int(sess.run(nxt)) for _ in range(3)] == [100, 102, 104]
            sess.run(it.initializer, {build.scale: 5})
            assert [int(sess.run(nxt)) for _ in range(3)] == [100, 105, 110]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)


def test_one_shot_refuses_placeholders():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [3])
        with pytest.raises(ValueError, match="placeholder"):
            Dataset.from_tensor_slices(p).make_one_shot_iterator()


def test_batch_padded_batch_unbatch():
    got = collect(lambda: Dataset.range(7).batch(3, drop_remainder=True))
    assert [list(b) for b in got] == [[0, 1, 2], [3, 4, 5]]
    got = collect(lambda: Dataset.range(1, 4).map(lambda x: tf.fill([x], x)).padded_batch(2, [None]))
    assert [b.tolist() for b in got] == [[[1, 0], [2, 2]], [[3, 3, 3]]]
    got = collect(lambda: Dataset.range(1, 3).map(lambda x: tf.fill([x], x))
                  .padded_batch(2, [4], padding_values=tf.constant(-1, tf.int64)))
    assert [b.tolist() for b in got] == [[[1, -1, -1, -1], [2, 2, -1, -1]]]
    got = collect(lambda: Dataset.from_tensors(np.arange(6).reshape(3, 2)).unbatch())
    assert [e.tolist() for e in got] == [[0, 1], [2, 3], [4, 5]]
    got = collect(lambda: Dataset.from_tensors(np.arange(4)).apply(tf.data.experimental.unbatch()))
    assert ints(got) == [0, 1, 2, 3]


def test_batch_of_unequal_shapes_fails():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot batch tensors"):
        collect(lambda: Dataset.range(1, 4).map(lambda x: tf.fill([x], x)).batch(2))


def test_shuffle_is_a_permutation_and_seeded():
    a = collect(lambda: Dataset.range(50).shuffle(10, seed=3))
    b = collect(lambda: Dataset.range(50).shuffle(10, seed=3))
    assert sorted(ints(a)) == list(range(50)) and ints(a) == ints(b) and ints(a) != list(range(50))
    # reshuffle_each_iteration: each pass of repeat() has its own order.
    two = ints(collect(lambda: Dataset.range(20).shuffle(20, seed=1).repeat(2)))
    assert sorted(two[:20]) == sorted(two[20:]) == list(range(20)) and two[:20] != two[20:]
    same = ints(collect(lambda: Dataset.range(20).shuffle(20, seed=1, reshuffle_each_iteration=False)
                        .repeat(2)))
    assert same[:20] == same[20:]


def test_repeat_take_skip_shard_enumerate_cache_prefetch():
    assert ints(collect(lambda: Dataset.range(3).repeat(2))) == [0, 1, 2, 0, 1, 2]
    assert ints(collect(lambda: Dataset.range(3).repeat().take(7))) == [0, 1, 2, 0, 1, 2, 0]
    assert ints(collect(lambda: Dataset.range(6).skip(4))) == [4, 5]
    assert ints(collect(lambda: Dataset.range(6).take(-1))) == list(range(6))
    assert ints(collect(lambda: Dataset.range(10).shard(3, 1))) == [1, 4, 7]
    got = collect(lambda: Dataset.range(5, 8).enumerate())
    assert [(int(i), int(v)) for i, v in got] == [(0, 5), (1, 6), (2, 7)]
    assert ints(collect(lambda: Dataset.range(4).cache().repeat(2))) == [0, 1, 2, 3] * 2
    assert ints(collect(lambda: Dataset.range(100).map(lambda x: x + 1)
                        .prefetch(tf.data.experimental.AUTOTUNE))) == list(range(1, 101))


def test_file_cache_is_read_by_later_iterators(tmp_path):
    path = str(tmp_path / "c")
    calls = []

    def gen():
        calls.append(1)
        yield from [(b"a", [1.5, 2.0]), (b"bc", [3.0, 4.0])]

    def make():
        return Dataset.from_generator(gen, (tf.string, tf.float32), ([], [2])).cache(path)
    first = collect(make)
    partial = collect(lambda: make().take(1))  # reads the complete cache, not the generator
    second = collect(make)
    assert len(calls) == 1
    assert [(s, v.tolist()) for s, v in second] == [(b"a", [1.5, 2.0]), (b"bc", [3.0, 4.0])]
    assert [(s, v.tolist()) for s, v in first] == [(s, v.tolist()) for s, v in second]
    assert partial[0][0] == b"a"
    assert os.listdir(tmp_path) == ["c.dtfcache"]
    cut = str(tmp_path / "cut")
    assert ints(collect(lambda: Dataset.range(5).cache(cut).take(2))) == [0, 1]
    assert sorted(os.listdir(tmp_path)) == ["c.dtfcache"]  # an unfinished pass caches nothing


def test_map_with_random_op_and_parallel_calls():
    got = collect(lambda: Dataset.range(4).map(
        lambda x: tf.random_uniform([]) + tf.cast(x, tf.float32), num_parallel_calls=2))
    frac = [float(v) - i for i, v in enumerate(got)]
    assert all(0 <= f < 1 for f in frac) and len(set(frac)) == 4


def test_from_generator():
    def gen():
        for i in range(3):
            yield i, [1.0] * i
    got = collect(lambda: Dataset.from_generator(gen, (tf.int32, tf.float32), ([], [None])))
    assert [(int(a), b.tolist()) for a, b in got] == [(0, []), (1, [1.0]), (2, [1.0, 1.0])]

    def bad():
        yield [1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        collect(lambda: Dataset.from_generator(bad, tf.int64, []))


def test_generator_from_another_process_is_a_clear_error():
    from dtf.data import generators

    with pytest.raises(RuntimeError, match="only in the process"):
        generators.lookup("pyfunc_0@elsewhere")


def test_get_next_before_initializer():
    with tf.Graph().as_default():
        it = Dataset.range(3).make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.FailedPreconditionError, match="not been initialized"):
                sess.run(nxt)
