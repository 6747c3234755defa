"""tf.data iterator kinds: one-shot, initializable, reinitializable, feedable; the end of
input as OutOfRangeError in the loops TF1 programs write around it."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

Dataset = tf.data.Dataset


def test_module_level_one_shot_and_initializable():
    with tf.Graph().as_default():
        a = tf.data.make_one_shot_iterator(Dataset.range(2)).get_next()
        p = tf.placeholder(tf.int64, [None])
        it = tf.data.make_initializable_iterator(Dataset.from_tensor_slices(p))
        b = it.get_next()
        with tf.Session() as sess:
            assert [int(sess.run(a)), int(sess.run(a))] == [0, 1]
            sess.run(it.initializer, {p: [7, 8]})
            assert [int(sess.run(b)), int(sess.run(b))] == [7, 8]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(b)


def test_reinitializable_iterator():
    with tf.Graph().as_default():
        train = Dataset.range(100).map(lambda x: tf.cast(x, tf.float32)).batch(2)
        valid = Dataset.from_tensor_slices(np.array([[-1.0, -2.0]], np.float32))
        it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        assert it.output_shapes.as_list() == [None]
        x = it.get_next()
        init_train, init_valid = it.make_initializer(train), it.make_initializer(valid.unbatch().batch(2))
        with tf.Session() as sess:
            sess.run(init_train)
            assert sess.run(x).tolist() == [0, 1] and sess.run(x).tolist() == [2, 3]
            sess.run(init_valid)
            assert sess.run(x).tolist() == [-1, -2]
            sess.run(init_train)
            assert sess.run(x).tolist() == [0, 1]
        with pytest.raises(TypeError):
            it.make_initializer(Dataset.range(3))


def test_feedable_iterator_from_string_handle():
    with tf.Graph().as_default():
        handle = tf.placeholder(tf.string, [])
        a = Dataset.range(10).make_one_shot_iterator()
        b = Dataset.range(100, 110).make_initializable_iterator()
        it = tf.data.Iterator.from_string_handle(handle, a.output_types, a.output_shapes)
        x = it.get_next()
        with tf.Session() as sess:
            ha, hb = sess.run([a.string_handle(), b.string_handle()])
            sess.run(b.initializer)
            assert [int(sess.run(x, {handle: ha})) for _ in range(2)] == [0, 1]
            assert int(sess.run(x, {handle: hb})) == 100
            assert int(sess.run(x, {handle: ha})) == 2
            with pytest.raises(tf.errors.NotFoundError):
                sess.run(x, {handle: b"::nonexistent"})


def test_classic_while_true_loop_and_epochs():
    with tf.Graph().as_default():
        it = Dataset.range(5).batch(2).make_initializable_iterator()
        x = it.get_next()
        with tf.Session() as sess:
            for _ in range(2):
                sess.run(it.initializer)
                n = 0
                while True:
                    try:
                        n += len(sess.run(x))
                    except tf.errors.OutOfRangeError:
                        break
                assert n == 5


def test_monitored_training_session_stops_at_end_of_input(tmp_path):
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        x = Dataset.from_tensor_slices(np.ones((7, 2), np.float32)).batch(2).make_one_shot_iterator().get_next()
        w = tf.Variable(np.zeros(2, np.float32))
        loss = tf.reduce_sum((x - w) ** 2)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
        steps = 0
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
            while not sess.should_stop():
                sess.run(train)
                steps += 1
        assert steps == 4


def test_prefetch_thread_stops_when_reinitialized():
    import threading

    def prefetchers():
        return [t for t in threading.enumerate() if t.name == "dtf-prefetch"]

    before = len(prefetchers())
    with tf.Graph().as_default():
        it = Dataset.range(1000).prefetch(2).make_initializable_iterator()
        x = it.get_next()
        with tf.Session() as sess:
            for _ in range(3):
                sess.run(it.initializer)
                sess.run(x)
            assert len(prefetchers()) <= before + 1
