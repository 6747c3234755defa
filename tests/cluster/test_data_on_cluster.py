"""tf.data on real task processes: each between-graph replica's iterator lives on its own
worker task and reads its own shard; variables stay on the ps."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster


def _replica_graph(cl, index, num_workers):
    g = tf.Graph()
    with g.as_default():
        setter = tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{index}", cluster=cl.cluster_spec())
        with tf.device(setter):
            total = tf.Variable(0, dtype=tf.int64, name="total")
            scale = tf.placeholder(tf.int64, [], name="scale")
            ds = (tf.data.Dataset.range(20).shard(num_workers, index)
                  .map(lambda x: x * scale).batch(3))
            it = ds.make_initializable_iterator()
            batch = it.get_next()
            step = tf.assign_add(total, tf.reduce_sum(batch))
            one_shot = tf.data.Dataset.range(4).map(lambda x: x + 100 * index).make_one_shot_iterator()
            first = one_shot.get_next()
    return g, it, batch, step, scale, total, first


def test_each_worker_reads_its_own_shard(make_cluster):
    cl = make_cluster(ps=1, worker=2).start_all()
    seen = {}
    for index in (0, 1):
        g, it, batch, step, scale, total, first = _replica_graph(cl, index, 2)
        assert it._iterator_resource.op.device == f"/job:worker/task:{index}"
        assert total.op.device.startswith("/job:ps")
        with tf.Session(cl.target("worker", index), graph=g) as sess:
            if index == 0:
                sess.run(tf.variables_initializer([total]))
            sess.run(it.initializer, {scale: 10})
            got = []
            while True:
                try:
                    b, _ = sess.run([batch, step])
                    got.extend(int(v) for v in b)
                except tf.errors.OutOfRangeError:
                    break
            seen[index] = got
            assert [int(sess.run(first)) for _ in range(4)] == [100 * index + k for k in range(4)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(first)
            final = int(sess.run(total))
    assert seen[0] == [v * 10 for v in range(0, 20, 2)]
    assert seen[1] == [v * 10 for v in range(1, 20, 2)]
    assert final == sum(range(20)) * 10


def test_generator_on_a_remote_worker_is_a_clear_error(make_cluster):
    cl = make_cluster(worker=1).start_all()
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:0"):
            ds = tf.data.Dataset.from_generator(lambda: iter([1, 2]), tf.int64, [])
            nxt = ds.make_one_shot_iterator().get_next()
        with tf.Session(cl.target("worker", 0), graph=g) as sess:
            with pytest.raises(tf.errors.OpError, match="only in the process"):
                sess.run(nxt)
