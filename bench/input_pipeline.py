"""W8: input pipelines in a local session, written once against the TF1 API.

- ``w8.map_batch_el_s``: from_tensor_slices(20,000 x 784 float32 + labels) -> map
  (scale, cast) -> batch 128 -> repeat, one-shot iterator; elements per second taken by
  ``sess.run(get_next)``.
- ``w8.tfrecord_records_s``: TFRecord file of 28x28 uint8 images as Examples ->
  parse_single_example -> decode_raw -> reshape/cast (map, 2 parallel calls) -> shuffle
  10,000 -> batch 128 -> prefetch; records per second.
- ``w8.queue_records_s``: the same records the TF1 classic way: string_input_producer ->
  TFRecordReader -> parse_single_example -> decode_raw -> shuffle_batch (capacity 10,000,
  2 threads) under QueueRunners; records per second.
- ``w8.prefetch_wait_ms`` / ``w8.queue_wait_ms``: the same two record pipelines feeding a
  training loop slower than they are: each step takes a batch (``sess.run(get_next)``)
  and then "trains" for ``MODEL_S`` (a sleep: a model's kernels let go of the interpreter
  lock, as TensorFlow's and BLAS's do). Mean milliseconds per step spent taking the batch:
  near the cost of a dequeue when the prefetch buffer or the queue is kept full in the
  background, up to the batch's production time when the step waits for its input.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np

MAP_ROWS = 20_000
BATCH = 128
RECORDS = 5_000
MODEL_S = 0.010  # a step of the slower model: 128 records in 10 ms is 12,800 records/s


def _rate(sess, nxt, batches):
    t0 = time.perf_counter()
    for _ in range(batches):
        sess.run(nxt)
    return batches * BATCH / (time.perf_counter() - t0)


def _input_wait_ms(sess, nxt, steps):
    """Mean ms per step in sess.run(nxt) while each step's model takes MODEL_S."""
    waited = 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        sess.run(nxt)
        waited += time.perf_counter() - t0
        time.sleep(MODEL_S)
    return waited / steps * 1e3


def _write_records(tf, path):
    rng = np.random.RandomState(0)
    with tf.python_io.TFRecordWriter(path) as w:
        for i in range(RECORDS):
            image = rng.randint(0, 256, size=(28, 28), dtype=np.uint8)
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 10])),
            })).SerializeToString())


def setup_input_pipeline(tf, env):
    tmp = tempfile.mkdtemp(prefix="w8-")
    env.on_close(lambda: shutil.rmtree(tmp, ignore_errors=True))
    path = os.path.join(tmp, "images.tfrecord")
    _write_records(tf, path)
    rng = np.random.RandomState(1)
    images = rng.rand(MAP_ROWS, 784).astype(np.float32)
    labels = rng.randint(0, 10, MAP_ROWS).astype(np.int64)
    g = tf.Graph()
    with g.as_default():
        mapped = (tf.data.Dataset.from_tensor_slices((images, labels))
                  .map(lambda x, y: (x * 2.0 - 1.0, tf.cast(y, tf.int32))).batch(BATCH).repeat())
        map_next = tf.data.make_one_shot_iterator(mapped).get_next()

        def parse(record):
            f = tf.parse_single_example(record, {"image": tf.FixedLenFeature([], tf.string),
                                                 "label": tf.FixedLenFeature([], tf.int64)})
            image = tf.cast(tf.reshape(tf.decode_raw(f["image"], tf.uint8), [28, 28, 1]), tf.float32)
            return image / 255.0, f["label"]
        records = (tf.data.TFRecordDataset(path).map(parse, num_parallel_calls=2)
                   .shuffle(10_000, seed=1).batch(BATCH).repeat().prefetch(2))
        rec_next = tf.data.make_one_shot_iterator(records).get_next()
    q = tf.Graph()
    with q.as_default():
        files = tf.train.string_input_producer([path])
        _, record = tf.TFRecordReader().read(files)
        image, label = parse(record)
        queue_next = tf.train.shuffle_batch([image, label], BATCH, capacity=10_000,
                                            min_after_dequeue=5_000, num_threads=2, seed=1)
    sess = env.session(g)
    qsess = env.session(q)
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(qsess, coord)

    def stop():
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    env.on_close(stop)
    for _ in range(5):
        sess.run(map_next)
        sess.run(rec_next)
        qsess.run(queue_next)

    def measure(quick):
        n = 40 if quick else 120
        out = {"w8.map_batch_el_s": _rate(sess, map_next, n),
               "w8.tfrecord_records_s": _rate(sess, rec_next, n),
               "w8.queue_records_s": _rate(qsess, queue_next, n)}
        # After the rates: the queue holds about min_after_dequeue records, so it only
        # stays ahead of the model if the runners produce faster than it consumes.
        steps = 15 if quick else 40
        out["w8.prefetch_wait_ms"] = _input_wait_ms(sess, rec_next, steps)
        out["w8.queue_wait_ms"] = _input_wait_ms(qsess, queue_next, steps)
        return out

    return measure
