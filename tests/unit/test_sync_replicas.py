"""SyncReplicasOptimizer in one process: threads play the replicas, sharing one session
(the accumulators and the token queue are shared through their shared names)."""
import threading
import time

import numpy as np
import pytest

import dtf as tf

LR = 0.5


def _build(num_replicas, replicas_to_aggregate):
    """One variable w of num_replicas entries; replica i's gradient is the unit vector e_i,
    so -w / LR sums, per replica, its share of the averaged updates."""
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable(np.zeros(num_replicas, np.float32), name="w")
    replicas = []
    for i in range(num_replicas):
        loss = tf.reduce_sum(w * tf.constant(np.eye(num_replicas, dtype=np.float32)[i]))
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR),
                                             replicas_to_aggregate, num_replicas)
        train_op = opt.minimize(loss, global_step=gs)
        replicas.append((train_op, opt.make_session_run_hook(is_chief=i == 0)))
    return gs, w, replicas


def _start(sess, replicas):
    coord = tf.train.Coordinator()
    for _, hook in replicas:
        hook.begin()
    sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    for _, hook in replicas:
        hook.after_create_session(sess, coord)
    return coord


def _train(sess, replicas, gs, last_step):
    """Each replica loops like a StopAtStepHook trainer; the chief's hook ends after its
    loop. Every replica must leave its loop: none may hang on a token."""
    done = []

    def loop(train_op):
        while sess.run([train_op, gs])[1] < last_step and sess.run(gs) < last_step:
            pass
        done.append(train_op)

    threads = [threading.Thread(target=loop, args=(t,), daemon=True) for t, _ in replicas]
    for t in threads:
        t.start()
    threads[0].join(30)
    assert not threads[0].is_alive(), "the chief did not reach the last step"
    start = time.monotonic()
    replicas[0][1].end(sess)
    assert time.monotonic() - start < 3, "ending the chief's hook stalled"
    for t in threads[1:]:
        t.join(10)
    assert all(not t.is_alive() for t in threads), "a replica hangs after the last step"


def _updates(w_value):
    """How many averaged updates went into w: each average of unit vectors sums to 1."""
    return float(-np.sum(w_value) / LR)


def test_two_replicas_average_their_gradients_once_per_global_step():
    gs, w, replicas = _build(2, 2)
    with tf.Session() as sess:
        _start(sess, replicas)
        _train(sess, replicas, gs, 20)
        step, w_value = sess.run([gs, w])
    assert step == 20
    # Every global step applied one average of the replicas' gradients, once.
    assert _updates(w_value) == pytest.approx(step, abs=1e-4)


def test_first_update_is_the_average_of_both_replicas():
    gs, w, replicas = _build(2, 2)
    with tf.Session() as sess:
        _start(sess, replicas)
        threads = [threading.Thread(target=sess.run, args=(t,)) for t, _ in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        deadline = time.monotonic() + 10
        while sess.run(gs) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        np.testing.assert_allclose(sess.run(w), [-LR / 2, -LR / 2])
        assert sess.run(gs) == 1
        replicas[0][1].end(sess)


def test_backup_replica_three_replicas_aggregate_two():
    gs, w, replicas = _build(3, 2)
    with tf.Session() as sess:
        _start(sess, replicas)
        _train(sess, replicas, gs, 15)
        step, w_value = sess.run([gs, w])
    assert step >= 15
    # The backup's late gradients were dropped as stale: still one average per step.
    assert _updates(w_value) == pytest.approx(step, abs=1e-4)


def test_monitored_session_with_the_hook_stops_at_last_step_and_closes_promptly():
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable([1.0], name="w")
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 1)
    train_op = opt.minimize(tf.reduce_sum(w * w), global_step=gs)
    hooks = [opt.make_session_run_hook(True), tf.train.StopAtStepHook(last_step=5)]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op)
        start = time.monotonic()
    assert time.monotonic() - start < 3


def test_graph_structure_and_placement():
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0")):
        gs = tf.train.get_or_create_global_step()
        w = tf.Variable([1.0, 2.0], name="w")
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        train_op = opt.minimize(tf.reduce_sum(w * w), global_step=gs)
    assert train_op.op.type == "Assign"
    local_step = tf.local_variables()
    assert [v.op.name for v in local_step] == ["sync_rep_local_step"]
    assert local_step[0].device == "/job:worker/task:0"
    graph = tf.get_default_graph()
    accums = [op for op in graph.get_operations() if op.type == "ConditionalAccumulator"]
    assert len(accums) == 1 and accums[0].get_attr("shared_name") == "w:0/grad_accum"
    assert accums[0].device == w.device == "/job:ps/task:0"
    queue = graph.get_operation_by_name("sync_token_q")
    assert queue.device == gs.device and queue.get_attr("shared_name") == "sync_token_q"
    assert opt.get_chief_queue_runner() is not None


def test_errors_before_and_during_apply_gradients():
    w = tf.Variable([1.0])
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 3)
    with pytest.raises(ValueError, match="apply_gradients"):
        opt.get_chief_queue_runner()
    with pytest.raises(ValueError, match="apply_gradients"):
        opt.get_init_tokens_op()
    with pytest.raises(ValueError, match="apply_gradient"):
        opt.make_session_run_hook(True).begin()
    with pytest.raises(ValueError, match="Global step is required"):
        opt.minimize(tf.reduce_sum(w))
    with pytest.raises(ValueError, match="at least one variable"):
        opt.apply_gradients([], global_step=tf.train.get_or_create_global_step())


def test_init_tokens_rules():
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable([1.0])
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 3, 1)
    opt.minimize(tf.reduce_sum(w), global_step=gs)
    with pytest.raises(ValueError, match="Too few tokens"):
        opt.get_init_tokens_op(num_tokens=1)
    assert opt.get_init_tokens_op().type == "QueueEnqueueManyV2"
    assert opt.get_init_tokens_op(num_tokens=2).type == "QueueEnqueueManyV2"
    backup = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 3)
    backup.minimize(tf.reduce_sum(w), global_step=gs)
    assert backup.get_init_tokens_op(num_tokens=0).type == "NoOp"


def test_variable_averages_are_kept_by_the_chief_update():
    """SyncReplicasOptimizer(variable_averages=ExponentialMovingAverage): the chief's update
    also refreshes the shadows, once per global step."""
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable([1.0], name="w")
    ema = tf.train.ExponentialMovingAverage(0.5)
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.25), 1,
                                         variable_averages=ema, variables_to_average=[w])
    train_op = opt.minimize(tf.reduce_sum(w), global_step=gs)
    hook = opt.make_session_run_hook(True)
    with tf.Session() as sess:
        _start(sess, [(train_op, hook)])
        while sess.run(gs) < 2:
            sess.run(train_op)
        hook.end(sess)  # joins the chief's update thread: its last averaging is done
        step, w_value, average = sess.run([gs, w, ema.average(w)])
    # w: 1 -> 0.75 -> 0.5 ...; the shadow follows once per step: 1 -> 0.875 -> 0.6875 ...
    want = 1.0
    for k in range(1, step + 1):
        want = 0.5 * want + 0.5 * (1.0 - 0.25 * k)
    assert step >= 2 and w_value[0] == pytest.approx(1.0 - 0.25 * step)
    assert average[0] == pytest.approx(want)


def test_embedding_gradients_are_aggregated_sparse_per_row():
    """An embedding's IndexedSlices gradients go through a SparseConditionalAccumulator:
    the chief applies each touched row's average over the replicas that sent it (TF's
    rule), and untouched rows stay as they were."""
    gs = tf.train.get_or_create_global_step()
    table = tf.Variable(np.zeros([10, 2], np.float32), name="table")
    replicas = []
    # Sorted distinct ids per replica (what TF's accumulator merge expects).
    for i, ids in enumerate(([1, 4], [4, 7])):
        rows = tf.gather(table, tf.constant(ids, tf.int64))
        loss = tf.reduce_sum(rows * (i + 1.0))
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(LR), 2, 2)
        replicas.append((opt.minimize(loss, global_step=gs), opt.make_session_run_hook(i == 0)))
    graph = tf.get_default_graph()
    types = {op.type for op in graph.get_operations()}
    assert "SparseConditionalAccumulator" in types and "ConditionalAccumulator" not in types
    with tf.Session() as sess:
        _start(sess, replicas)
        threads = [threading.Thread(target=sess.run, args=(t,)) for t, _ in replicas]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        deadline = time.monotonic() + 10
        while sess.run(gs) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        value = sess.run(table)
        replicas[0][1].end(sess)
    want = np.zeros([10, 2], np.float32)
    want[1] = -LR * 1.0            # only replica 0 sent row 1
    want[4] = -LR * (1.0 + 2.0) / 2  # both sent row 4: their average
    want[7] = -LR * 2.0            # only replica 1 sent row 7
    np.testing.assert_allclose(value, want)
