"""TF1's queue-based input: RandomShuffleQueue, readers, input producers, batch and
shuffle_batch with QueueRunner threads, and their shutdown."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import dtf as tf
from dtf.io.example_pb import Example, Feature, Features, FloatList, Int64List


def runner_threads():
    return [t for t in threading.enumerate() if t.name.startswith("QueueRunner")]


def write_examples(path, start, n):
    with tf.python_io.TFRecordWriter(path) as w:
        for i in range(start, start + n):
            w.write(Example(features=Features(feature={
                "x": Feature(float_list=FloatList(value=[i, -i])),
                "y": Feature(int64_list=Int64List(value=[i]))})).SerializeToString())


def test_random_shuffle_queue_keeps_min_after_dequeue_until_closed():
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(20, 5, tf.int32, shapes=[], seed=1)
        enq = q.enqueue_many([tf.range(10)])
        deq = q.dequeue()
        many = q.dequeue_up_to(4)
        size = q.size()
        close = q.close()
        with tf.Session() as sess:
            sess.run(enq)
            got = [int(sess.run(deq)) for _ in range(5)]
            assert sess.run(size) == 5
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(deq, options=tf.RunOptions(timeout_in_ms=200))  # 5 must stay
            sess.run(close)
            got += sess.run(many).tolist()
            got += sess.run(many).tolist()  # only one left: up_to returns it
            assert sorted(got) == list(range(10)) and got != list(range(10))
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(many)


def test_fifo_dequeue_up_to():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.int32, shapes=[])
        with tf.Session() as sess:
            sess.run(q.enqueue_many([[1, 2, 3]]))
            sess.run(q.close())
            assert sess.run(q.dequeue_up_to(2)).tolist() == [1, 2]
            assert sess.run(q.dequeue_up_to(2)).tolist() == [3]


def test_readers(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"header\nl1\nl2\n")
    (tmp_path / "b.bin").write_bytes(b"Habcdef")
    write_examples(str(tmp_path / "r.tfrecord"), 0, 3)
    with tf.Graph().as_default():
        def queue_of(*names):
            q = tf.FIFOQueue(5, tf.string, shapes=[])
            return q, q.enqueue_many([[str(tmp_path / n) for n in names]]), q.close()
        q1, e1, c1 = queue_of("a.txt")
        text = tf.TextLineReader(skip_header_lines=1)
        key, line = text.read(q1)
        q2, e2, c2 = queue_of("b.bin", "a.txt")
        whole = tf.WholeFileReader()
        wkey, contents = whole.read(q2)
        q3, e3, c3 = queue_of("b.bin")
        fixed = tf.FixedLengthRecordReader(3, header_bytes=1)
        fkeys, fvalues = fixed.read_up_to(q3, 5)
        q4, e4, c4 = queue_of("r.tfrecord")
        rec = tf.TFRecordReader()
        rkey, rvalue = rec.read(q4)
        produced = rec.num_records_produced()
        q5 = tf.FIFOQueue(5, tf.string, shapes=[])
        ikey, ivalue = tf.IdentityReader().read(q5)
        with tf.Session() as sess:
            for op in (e1, c1, e2, c2, e3, c3, e4, c4, q5.enqueue("w")):
                sess.run(op)
            assert sess.run([key, line]) == [f"{tmp_path}/a.txt:2".encode(), b"l1"]
            assert sess.run(line) == b"l2"
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(line)
            assert sess.run(contents) == b"Habcdef" and sess.run(wkey).endswith(b"a.txt")
            assert sess.run(fvalues).tolist() == [b"abc", b"def"]
            records = [sess.run(rvalue) for _ in range(3)]
            assert [Example.FromString(r).features.feature["y"].int64_list.value[0]
                    for r in records] == [0, 1, 2]
            assert sess.run(produced) == 3
            assert sess.run([ikey, ivalue]) == [b"w", b"w"]


def test_classic_tfrecord_pipeline_with_shuffle_batch(tmp_path):
    for k in range(2):
        write_examples(str(tmp_path / f"part-{k}.tfrecord"), 10 * k, 10)
    with tf.Graph().as_default():
        names = [str(tmp_path / f"part-{k}.tfrecord") for k in range(2)]
        fq = tf.train.string_input_producer(names, num_epochs=2, seed=3)
        _, serialized = tf.TFRecordReader().read(fq)
        f = tf.parse_single_example(serialized, {"x": tf.FixedLenFeature([2], tf.float32),
                                                 "y": tf.FixedLenFeature([], tf.int64)})
        xs, ys = tf.train.shuffle_batch([f["x"], f["y"]], batch_size=6, capacity=30,
                                        min_after_dequeue=5, num_threads=2, seed=4,
                                        allow_smaller_final_batch=True)
        assert xs.shape.as_list() == [None, 2]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess=sess, coord=coord)
            seen = []
            try:
                while not coord.should_stop():
                    x, y = sess.run([xs, ys])
                    np.testing.assert_array_equal(x[:, 0], y)
                    seen.extend(y.tolist())
            except tf.errors.OutOfRangeError:
                pass
            finally:
                coord.request_stop()
            coord.join(threads)
        assert sorted(seen) == sorted(list(range(20)) * 2)
    assert not runner_threads()


def test_slice_and_range_producers_and_batch_join():
    with tf.Graph().as_default():
        a, b = tf.train.slice_input_producer([tf.constant([1, 2, 3]), tf.constant([10, 20, 30])],
                                             shuffle=False)
        joined = tf.train.batch_join([[a * 1], [b * 1]], batch_size=4)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got = sess.run(joined)[0]
            assert len(got) == 4 and set(got.tolist()) <= {1, 2, 3, 10, 20, 30}
            coord.request_stop()
            coord.join(threads)


def test_threads_end_when_coordinator_stops_while_queue_full():
    with tf.Graph().as_default():
        x = tf.train.batch([tf.constant(1.0)], batch_size=2, capacity=3)
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            sess.run(x)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)  # blocked enqueues are cancelled
    assert not runner_threads()


def test_threads_end_when_session_closes_without_a_coordinator():
    with tf.Graph().as_default():
        x = tf.train.batch([tf.constant(1.0)], batch_size=2, capacity=3, num_threads=2)
        sess = tf.Session()
        threads = tf.train.start_queue_runners(sess)
        sess.run(x)
        sess.close()
        assert not any(t.is_alive() for t in threads)


def test_monitored_training_session_runs_queue_runners_until_epochs_end(tmp_path):
    write_examples(str(tmp_path / "d.tfrecord"), 0, 8)
    with tf.Graph().as_default():
        gs = tf.train.get_or_create_global_step()
        fq = tf.train.string_input_producer([str(tmp_path / "d.tfrecord")], num_epochs=3)
        _, s = tf.TFRecordReader().read(fq)
        f = tf.parse_single_example(s, {"x": tf.FixedLenFeature([2], tf.float32)})
        xb = tf.train.batch([f["x"]], 4)[0]
        w = tf.Variable([0.0, 0.0])
        train = tf.train.GradientDescentOptimizer(0.01).minimize(
            tf.reduce_sum((xb - w) ** 2), global_step=gs)
        steps = 0
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / "ckpt")) as sess:
            while not sess.should_stop():
                sess.run(train)
                steps += 1
        assert steps == 6
    assert not runner_threads()


def test_supervisor_starts_queue_runners_and_stops_them(tmp_path):
    write_examples(str(tmp_path / "s.tfrecord"), 0, 6)
    with tf.Graph().as_default():
        fq = tf.train.string_input_producer([str(tmp_path / "s.tfrecord")], num_epochs=1,
                                            shuffle=False)
        _, s = tf.TFRecordReader().read(fq)
        y = tf.train.batch([tf.parse_single_example(s, {"y": tf.FixedLenFeature([], tf.int64)})["y"]],
                           3, allow_smaller_final_batch=True)[0]
        tf.train.get_or_create_global_step()
        init_local = tf.local_variables_initializer()
        sv = tf.train.Supervisor(logdir=str(tmp_path / "sv"), local_init_op=init_local,
                                 save_model_secs=0, save_summaries_secs=0)
        got = []
        with sv.managed_session() as sess:
            while not sv.should_stop():
                got.extend(sess.run(y).tolist())
        assert got == list(range(6))
    assert not runner_threads()


def test_padding_fifo_queue_and_dynamic_pad():
    with tf.Graph().as_default():
        q = tf.PaddingFIFOQueue(10, [tf.int32, tf.string], shapes=[[None], []])
        n = tf.placeholder(tf.int32, [])
        enq = q.enqueue([tf.fill([n], n), "s"])
        xs, _ = q.dequeue_many(3)
        assert xs.shape.as_list() == [3, None]
        lengths = tf.train.slice_input_producer([tf.constant([1, 3, 2])], shuffle=False)[0]
        padded = tf.train.batch([tf.fill([lengths], lengths)], batch_size=3, dynamic_pad=True)[0]
        with tf.Session() as sess:
            for k in (2, 0, 1):
                sess.run(enq, {n: k})
            assert sess.run(xs).tolist() == [[2, 2], [0, 0], [1, 0]]
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            assert sess.run(padded).tolist() == [[1, 0, 0], [3, 3, 3], [2, 2, 0]]
            coord.request_stop()
            coord.join(threads)
        with pytest.raises(ValueError, match="rank"):
            tf.PaddingFIFOQueue(2, tf.int32, shapes=[tf.TensorShape(None)])


def test_match_filenames_once_feeds_string_input_producer(tmp_path):
    for n in ("a", "b"):
        (tmp_path / f"{n}.txt").write_text(f"{n}1\n{n}2\n")
    with tf.Graph().as_default():
        names = tf.train.match_filenames_once(str(tmp_path / "*.txt"))
        assert names.op.name == "matching_filenames" and names in tf.local_variables()
        q = tf.train.string_input_producer(names, shuffle=False, num_epochs=1)
        _, line = tf.TextLineReader().read(q)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got = []
            try:
                while True:
                    got.append(sess.run(line))
            except tf.errors.OutOfRangeError:
                pass
            coord.request_stop()
            coord.join(threads)
    assert got == [b"a1", b"a2", b"b1", b"b2"]


def test_priority_queue_blocked_dequeue_is_woken_by_enqueue_and_by_close():
    with tf.Graph().as_default():
        q = tf.PriorityQueue(5, [tf.int64], shapes=[[]], shared_name="pq")
        prio = tf.placeholder(tf.int64, [])
        enq = q.enqueue((prio, prio * 10))
        deq = q.dequeue()
        with tf.Session() as sess:
            got = []
            t = threading.Thread(target=lambda: got.append(sess.run(deq)))
            t.start()
            sess.run(enq, {prio: 7})
            t.join(10)
            assert not t.is_alive() and got[0][0] == 7 and got[0][1] == 70
            for p in (4, -2, 9):
                sess.run(enq, {prio: p})
            assert [int(sess.run(deq)[0]) for _ in range(3)] == [-2, 4, 9]
            errs = []

            def blocked():
                try:
                    sess.run(deq)
                except tf.errors.OutOfRangeError as e:
                    errs.append(e)

            t = threading.Thread(target=blocked)
            t.start()
            sess.run(q.close())
            t.join(10)
            assert not t.is_alive() and len(errs) == 1 and "PriorityQueue" in errs[0].message


def test_priority_queue_needs_shapes_and_an_int64_scalar_priority():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="PriorityQueue needs shapes"):
            tf.PriorityQueue(5, [tf.int32], shapes=None)
        q = tf.PriorityQueue(5, [tf.int32], shapes=[[]])
        with pytest.raises(ValueError):
            q.enqueue((tf.constant([1, 2], tf.int64), 3))


def test_maybe_batch_variants_enqueue_only_kept_elements():
    with tf.Graph().as_default():
        rows, = tf.train.slice_input_producer([tf.constant(np.arange(12).reshape(6, 2))],
                                              num_epochs=1, shuffle=False)
        pairs, = tf.train.batch([rows], 2, allow_smaller_final_batch=True)
        many = tf.train.maybe_batch_join([[pairs]], tf.equal(pairs[:, 0] % 4, 0), 3,
                                         enqueue_many=True, allow_smaller_final_batch=True)
        one, = tf.train.slice_input_producer([tf.range(6)], num_epochs=1, shuffle=False)
        shuffled = tf.train.maybe_shuffle_batch([one], 3, 10, 0, one < 4, seed=1,
                                                allow_smaller_final_batch=True)
        with pytest.raises(ValueError, match="cannot be a vector"):
            tf.train.maybe_batch([one], [True], 2)
        with pytest.raises(ValueError, match="0 or 1 dimensions"):
            tf.train.maybe_batch([pairs], [[True]], 2, enqueue_many=True)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            got = {"many": [], "shuffled": []}
            for key, fetch in (("many", many), ("shuffled", shuffled)):
                try:
                    for _ in range(20):
                        got[key].append(sess.run(fetch, options=tf.RunOptions(timeout_in_ms=10000)))
                except tf.errors.OutOfRangeError:
                    pass
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert np.concatenate([g[0] for g in got["many"]]).tolist() == [[0, 1], [4, 5], [8, 9]]
    assert sorted(np.concatenate([g[0] for g in got["shuffled"]]).tolist()) == [0, 1, 2, 3]


def test_session_reset_gives_shared_queues_afresh():
    # Handle kernels keep the resource they found last; a reset must still drop it.
    server = tf.train.Server.create_local_server()
    try:
        with tf.Graph().as_default():
            q = tf.FIFOQueue(10, tf.float32, shapes=[], shared_name="shared_q")
            enq, size = q.enqueue(1.0), q.size()
            with tf.Session(server.target) as sess:
                sess.run(enq)
                sess.run(enq)
                assert sess.run(size) == 2
            tf.Session.reset(server.target)
            with tf.Session(server.target) as sess:
                assert sess.run(size) == 0
                sess.run(enq)
                assert sess.run(size) == 1
    finally:
        server.stop()


def test_a_cleared_resource_is_looked_up_again_by_the_same_step():
    with tf.Graph().as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[])
        enq, size = q.enqueue(1.0), q.size()
        with tf.Session() as sess:
            step = sess.make_callable(enq)
            step()
            step()
            assert sess.run(size) == 2
            sess._backend._state.resources.clear()  # what a reset does to a task's resources
            step()
            assert sess.run(size) == 1


def test_tfrecord_reader_names_the_file_of_a_corrupted_record(tmp_path):
    path = str(tmp_path / "bad.tfrecord")
    write_examples(path, 0, 3)
    data = bytearray(open(path, "rb").read())
    data[-6] ^= 0xFF  # the last record's data: its CRC no longer matches
    open(path, "wb").write(bytes(data))
    with tf.Graph().as_default():
        files = tf.train.string_input_producer([path], num_epochs=1, shuffle=False)
        _, value = tf.TFRecordReader().read(files)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            sess.run(value)
            sess.run(value)
            with pytest.raises(tf.errors.DataLossError, match="bad.tfrecord: corrupted record"):
                sess.run(value)
            coord.request_stop()
            coord.join(threads)
