"""Embeddings on parameter servers: a table partitioned over two ps tasks, trained by a
worker with sparse updates. Only the looked-up rows change, only they cross the network
(counted from the step stats' receives), and a checkpoint restores onto a different number
of ps tasks (saved as TF saves it: slices of the full variable)."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf

pytestmark = pytest.mark.cluster

ROWS, DIM = 20000, 16


def _model(cluster_spec, num_ps, optimizer):
    setter = tf.train.replica_device_setter(ps_tasks=num_ps, worker_device="/job:worker/task:0",
                                            cluster=cluster_spec)
    with tf.device(setter):
        emb = tf.get_variable("emb", [ROWS, DIM], initializer=tf.random_uniform_initializer(-1, 1),
                              partitioner=tf.fixed_size_partitioner(2))
        ids = tf.placeholder(tf.int64, [None], name="ids")
        # "div": a PartitionedVariable's shards hold contiguous rows.
        rows = tf.nn.embedding_lookup(emb, ids, partition_strategy="div")
        loss = tf.reduce_sum(tf.square(rows - 1.0))
        train = optimizer.minimize(loss)
    return emb, ids, loss, train


def _received_elements(run_metadata):
    """Elements each task received in the step, by device (from its _Recv nodes)."""
    per_device = {}
    for dev in run_metadata.step_stats.dev_stats:
        n = sum(int(np.prod(s.output_shapes[0])) for s in dev.node_stats
                if " = _Recv(" in s.timeline_label and s.output_shapes)
        per_device[dev.device] = per_device.get(dev.device, 0) + n
    return per_device


def test_sharded_table_trains_touched_rows_only_and_moves_only_them(make_cluster):
    cl = make_cluster(ps=2, worker=1).start_all()
    emb, ids, loss, train = _model(cl.cluster_spec(), 2,
                                   tf.train.AdagradOptimizer(0.5))
    shards = list(emb)
    assert [v.op.name for v in shards] == ["emb/part_0", "emb/part_1"]
    assert [v.device for v in shards] == ["/job:ps/task:0", "/job:ps/task:1"]
    touched = np.array([3, 17, 10001, 19999, 3, 250], np.int64)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with tf.Session(cl.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        before = np.concatenate(sess.run(shards))
        first = sess.run(loss, {ids: touched})
        moved = []
        for n in (6, 12, 24):
            batch = np.resize(touched, n)
            meta = tf.RunMetadata()
            sess.run(train, {ids: batch}, options=options, run_metadata=meta)
            moved.append(_received_elements(meta))
        assert sess.run(loss, {ids: touched}) < first
        after = np.concatenate(sess.run(shards))
    changed = np.flatnonzero(np.any(after != before, axis=1))
    assert changed.tolist() == sorted(set(touched.tolist()))
    # Each step moves the looked-up rows each way plus ids and shapes: a few hundred
    # elements per id at most, never the 320,000-element table, and it grows with the ids.
    totals = [sum(m.values()) for m in moved]
    for n, total in zip((6, 12, 24), totals):
        assert 2 * n * DIM <= total <= 4 * n * DIM + 64, (n, moved)
    assert totals[0] < totals[1] < totals[2]
    ps_devices = [d for d in moved[0] if "/job:ps/" in d]
    assert ps_devices and all(moved[0][d] < ROWS for d in ps_devices), moved[0]


@pytest.mark.parametrize("sharded", [False, True])
def test_partitioned_checkpoint_restores_onto_a_different_number_of_ps_tasks(make_cluster,
                                                                            tmp_path, sharded):
    two = make_cluster(ps=2, worker=1).start_all()
    with tf.Graph().as_default():
        emb, ids, loss, train = _model(two.cluster_spec(), 2,
                                       tf.train.GradientDescentOptimizer(0.1))
        saver = tf.train.Saver(sharded=sharded)
        with tf.Session(two.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: [1, 2, 19998]})
            saved = np.concatenate(sess.run(list(emb)))
            path = saver.save(sess, str(tmp_path / "emb.ckpt"))
    assert dict(tf.train.list_variables(path))["emb"] == [ROWS, DIM]
    # As TF writes it: the full name lists each ps task's slice; sharded, each slice sits in
    # the data file of the task that saved it.
    from dtf.state import checkpoint_io

    reader = checkpoint_io.open_reader(path)
    slices = reader._entry("emb").slices
    assert sorted((s.extent[0].start, s.extent[0].length) for s in slices) == [(0, ROWS // 2),
                                                                              (ROWS // 2, ROWS // 2)]
    assert reader.header.num_shards == (2 if sharded else 1)
    three = make_cluster(ps=3, worker=1).start_all()
    with tf.Graph().as_default():
        setter = tf.train.replica_device_setter(ps_tasks=3, worker_device="/job:worker/task:0",
                                                cluster=three.cluster_spec())
        with tf.device(setter):
            emb3 = tf.get_variable("emb", [ROWS, DIM], partitioner=tf.fixed_size_partitioner(3))
        saver = tf.train.Saver()
        with tf.Session(three.target("worker", 0)) as sess:
            saver.restore(sess, path)
            restored = sess.run(tf.convert_to_tensor(emb3))
    assert [v.op.name for v in emb3] == ["emb/part_0", "emb/part_1", "emb/part_2"]
    assert [v.device for v in emb3] == [f"/job:ps/task:{i}" for i in range(3)]
    np.testing.assert_array_equal(restored, saved)


def test_word2vec_example_trains_a_table_partitioned_over_both_ps(make_cluster):
    import json
    import os
    import re
    import subprocess
    import sys

    from tests.cluster.conftest import REPO

    cl = make_cluster(ps=2, worker=2).start_all()
    # The non-chief starts first and polls for the chief's initialization (at least once a
    # second), and the run is long enough to outlast that poll: a chief that started first
    # could finish every step before the other worker's process had even built its graph.
    procs = []
    for i in (1, 0):
        env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CONFIG=json.dumps(
            {"cluster": cl.jobs, "task": {"type": "worker", "index": i}, "rpc_layer": "grpc"}))
        env.pop("DTF_PROGRESS", None)
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(REPO, "examples", "word2vec_skipgram.py"),
             "--vocabulary_size=2000", "--embedding_size=32", "--last_step=1000",
             "--report_steps=30"], cwd=REPO, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in reversed(procs):  # the chief (worker 0) first
        try:
            out, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            pytest.fail(f"word2vec worker did not finish:\n{out}")
        assert p.returncode == 0, out
        outs.append(out)
    assert "on /job:ps/task:0" in outs[0] and "on /job:ps/task:1" in outs[0], outs[0]
    # The workers share the 1000 global steps asynchronously: one that starts late may take
    # only a handful, whose own first and last losses are noise. The one that took the most
    # steps shows the model learning; every worker must have stepped.
    runs = []
    for out in outs:
        steps, first, last = re.search(
            r"(\d+) steps, mean loss of the first \d+ ([\d.]+), of the last \d+ ([\d.]+)",
            out).groups()
        assert int(steps) > 0, out
        runs.append((int(steps), float(first), float(last), out))
    steps, first, last, out = max(runs)
    assert steps >= 100 and last < 0.8 * first, out


def _sync_replica(cluster_spec, task, last_step):
    """One between-graph replica of synchronous training on an embedding held by ps 0."""
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(
            ps_tasks=1, worker_device=f"/job:worker/task:{task}", cluster=cluster_spec)
        with tf.device(setter):
            gs = tf.train.get_or_create_global_step()
            emb = tf.get_variable("emb", [ROWS, DIM],
                                  initializer=tf.random_uniform_initializer(-1, 1, seed=3))
            ids = tf.placeholder(tf.int64, [None], name="ids")
            loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(emb, ids) - 1.0))
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 2)
            train = opt.minimize(loss, global_step=gs)
        hooks = [opt.make_session_run_hook(task == 0), tf.train.StopAtStepHook(last_step=last_step)]
    return graph, gs, emb, ids, loss, train, hooks


def test_sync_replicas_aggregate_embedding_rows_sparsely_on_the_ps(make_cluster):
    """SyncReplicasOptimizer over 1 ps + 2 workers: the ps's accumulator receives the
    replicas' IndexedSlices, so a replica step moves the looked-up rows (plus ids, shapes
    and the step), never the 320,000-element table; only the touched rows change."""
    import threading

    cl = make_cluster(ps=1, worker=2).start_all()
    spec = cl.cluster_spec()
    feeds = (np.array([3, 17, 250, 10001], np.int64), np.array([17, 999, 19999], np.int64))
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    results, errors = {}, []

    def run(task):
        graph, gs, emb, ids, loss, train, hooks = _sync_replica(spec, task, last_step=4)
        types = {op.type for op in graph.get_operations()}
        assert "SparseAccumulatorApplyGradient" in types, sorted(types)
        moved = []
        try:
            with graph.as_default(), tf.train.MonitoredTrainingSession(
                    master=cl.target("worker", task), is_chief=task == 0, hooks=hooks) as sess:
                before = sess.run(emb) if task == 0 else None
                while not sess.should_stop():
                    meta = tf.RunMetadata()
                    sess.run(train, {ids: feeds[task]}, options=options, run_metadata=meta)
                    moved.append(_received_elements(meta))
            results[task] = (before, moved)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append((task, e))

    threads = [threading.Thread(target=run, args=(t,), daemon=True) for t in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert all(not t.is_alive() for t in threads), "a replica did not finish"
    with tf.Graph().as_default():
        graph, gs, emb, *_ = _sync_replica(spec, 0, last_step=4)
        with graph.as_default(), tf.Session(cl.target("worker", 0)) as sess:
            step, after = sess.run([gs, emb])
    before = results[0][0]
    assert step >= 4
    changed = set(np.flatnonzero(np.any(after != before, axis=1)).tolist())
    # A replica that starts late may see all its gradients dropped as stale (the chief's
    # alone can fill the first steps, as in TF): its rows need not change, no others may.
    assert set(feeds[0].tolist()) <= changed <= set(np.concatenate(feeds).tolist()), changed
    assert results[0][1], "the chief took no step"
    for task in (0, 1):
        n = len(feeds[task])
        for per_device in results[task][1]:
            total = sum(per_device.values())
            # rows out to the worker and the gradient's rows back to the ps, with ids,
            # shapes and scalars: about 2 * n * DIM, nothing near ROWS * DIM.
            assert 2 * n * DIM <= total <= 4 * n * DIM + 64, (task, per_device)
