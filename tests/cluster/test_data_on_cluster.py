"""tf.data on real task processes: each between-graph replica's iterator lives on its own
worker task and reads its own shard; variables stay on the ps."""
from __future__ import annotations

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


@pytest.mark.parametrize("mode", ["data", "queues"])
def test_tfrecord_digits_example_each_worker_reads_its_shards(tmp_path, mode):
    import os
    import subprocess
    import sys

    from dtf.train.server import free_port
    from tests.cluster.conftest import REPO

    ps, w0, w1 = (f"127.0.0.1:{free_port()}" for _ in range(3))
    script = os.path.join(REPO, "examples", "tfrecord_digits.py")
    common = [sys.executable, script, f"--ps_hosts={ps}", f"--worker_hosts={w0},{w1}",
              f"--data_dir={tmp_path / 'shards'}", f"--input={mode}", "--num_epochs=2"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("TF_CONFIG", None)
    procs = [subprocess.Popen(common + ["--job_name=ps"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)]
    try:
        workers = [subprocess.Popen(common + ["--job_name=worker", f"--task_index={i}"], cwd=REPO,
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True) for i in (0, 1)]
        procs += workers
        outs = [w.communicate(timeout=240)[0] for w in workers]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
    for i, (w, out) in enumerate(zip(workers, outs)):
        assert w.returncode == 0, out
    # 1,437 training digits in 4 shards of 360, 359, 359, 359: worker 0 reads shards 0 and
    # 2, worker 1 shards 1 and 3, each twice.
    assert f"worker 0 ({mode}) read {2 * 719} examples" in outs[0], outs[0]
    assert f"worker 1 ({mode}) read {2 * 718} examples" in outs[1], outs[1]
