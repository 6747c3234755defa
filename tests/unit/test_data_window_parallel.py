"""Dataset.window's errors and map(num_parallel_calls): calls really overlap, elements keep
their order, an error comes out at its element's place (values of window and parallel map
are compared with TensorFlow in tests/goldens/cases_data_window.py)."""
from __future__ import annotations

import threading
import time

import pytest

import dtf as tf
from tests.unit.test_data_dataset import collect

Dataset = tf.data.Dataset


def test_window_is_consumed_by_flat_map_only():
    with tf.Graph().as_default():
        w = Dataset.range(5).window(2)
        for build in (lambda: w.batch(2), lambda: w.map(lambda x: x),
                      lambda: w.make_one_shot_iterator(), lambda: w.window(2)):
            with pytest.raises(TypeError, match="dataset of datasets"):
                build()
        with pytest.raises(ValueError, match="Window shift must be greater than zero"):
            Dataset.range(5).window(2, shift=0)


def test_window_size_fed_at_run_time_is_checked():
    with tf.Graph().as_default():
        size = tf.placeholder(tf.int64, [])
        it = Dataset.range(5).window(size).flat_map(lambda w: w.batch(5)) \
            .make_initializable_iterator()
        nxt = it.get_next()
        with tf.Session() as sess:
            sess.run(it.initializer, {size: 2})
            assert sess.run(nxt).tolist() == [0, 1]
            with pytest.raises(tf.errors.InvalidArgumentError, match="Window size must be"):
                sess.run(it.initializer, {size: 0})
                sess.run(nxt)


def test_parallel_map_overlaps_calls_and_keeps_order():
    lock = threading.Lock()
    state = {"running": 0, "most": 0}

    def slow(x):
        with lock:
            state["running"] += 1
            state["most"] = max(state["most"], state["running"])
        time.sleep(0.02 if x % 3 else 0.06)  # later elements often finish first
        with lock:
            state["running"] -= 1
        return x * 2

    got = collect(lambda: Dataset.range(24).map(
        lambda x: tf.py_func(slow, [x], tf.int64), num_parallel_calls=4))
    assert [int(v) for v in got] == [2 * i for i in range(24)]
    assert state["most"] >= 2, state


def test_parallel_map_error_comes_at_its_element():
    def check(x):
        if x == 5:
            raise ValueError("element five")
        return x

    with tf.Graph().as_default():
        ds = Dataset.range(10).map(lambda x: tf.py_func(check, [x], tf.int64),
                                   num_parallel_calls=3)
        nxt = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            assert [int(sess.run(nxt)) for _ in range(5)] == [0, 1, 2, 3, 4]
            with pytest.raises(tf.errors.OpError, match="element five"):
                sess.run(nxt)
