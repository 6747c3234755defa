"""tf.train.Supervisor on local sessions: defaults from collections, init or restore,
the chief's services, stopping, and errors (the cluster tier runs it over tasks)."""
from __future__ import annotations

import glob
import threading
import time

import pytest

import dtf as tf
from dtf.framework import errors
from dtf.summary import summary_iterator


def _model():
    gs = tf.train.get_or_create_global_step()
    v = tf.Variable(10.0, name="v")
    tf.summary.scalar("v_value", v)
    train = tf.group(tf.assign_add(gs, 1), tf.assign_add(v, 1.0))
    return gs, v, train


_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def _events(logdir):
    found = []
    for path in sorted(glob.glob(f"{logdir}/events.out.tfevents.*")):
        found.extend(summary_iterator(path))
    return found


def _has_step_rate(sv):
    sv.summary_writer.flush()
    return any(val.tag == "global_step/sec" for e in _events(sv._logdir)
               if e.HasField("summary") for val in e.summary.value)


def _wait_for(condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the supervisor's services did not run"
        time.sleep(0.02)


def test_defaults_come_from_the_graph_and_land_in_collections(tmp_path):
    gs, v, _ = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path))
    assert sv.is_chief and sv.global_step is gs
    assert tf.get_collection(tf.GraphKeys.INIT_OP) == [sv.init_op]
    assert tf.get_collection(tf.GraphKeys.READY_OP) == [sv.ready_op]
    assert tf.get_collection(tf.GraphKeys.LOCAL_INIT_OP) == [sv._local_init_op]
    assert tf.get_collection(tf.GraphKeys.SAVERS) == [sv.saver]
    assert tf.get_collection(tf.GraphKeys.SUMMARY_OP) == [sv.summary_op]
    assert sv.ready_for_local_init_op is None
    assert sv.save_path == str(tmp_path / "model.ckpt")
    assert sv.save_model_secs == 600 and sv.save_summaries_secs == 120
    assert isinstance(sv.session_manager, tf.train.SessionManager)
    assert isinstance(sv.coord, tf.train.Coordinator)
    assert tf.get_default_graph().finalized
    sv.stop()


def test_none_turns_a_default_off_and_non_chief_keeps_no_writer(tmp_path):
    with tf.device(_CPU):
        _model()
    sv = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path), summary_op=None, saver=None,
                             global_step=None)
    assert sv.summary_op is None and sv.saver is None and sv.global_step is None
    assert sv.summary_writer is None and sv.save_path is None and sv.save_model_secs is None


def test_managed_session_initializes_trains_and_checkpoints_on_stop(tmp_path):
    gs, v, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=3600, save_model_secs=3600)
    with sv.managed_session() as sess:
        # The services' first pass runs when their threads get the CPU; as in TF1, a session
        # that stops before then skips it. Let them have it before training.
        _wait_for(lambda: tf.train.latest_checkpoint(str(tmp_path)) and _has_step_rate(sv))
        for _ in range(3):
            sess.run(train)
        assert not sv.should_stop()
        assert sess.run(v) == 13.0
    # The checkpoint thread saves once when it starts (at step 0), as TF1's does.
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-0")
    events = _events(tmp_path)
    logs = [e.session_log.status for e in events if e.HasField("session_log")]
    assert logs[0] == tf.summary.SessionLog.START and logs[-1] == tf.summary.SessionLog.STOP
    assert tf.summary.SessionLog.CHECKPOINT in logs
    assert any(e.HasField("graph_def") for e in events)
    tags = {val.tag for e in events if e.HasField("summary") for val in e.summary.value}
    assert {"v_value", "global_step/sec"} <= tags


def test_a_new_supervisor_restores_from_logdir(tmp_path):
    gs, v, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
    with sv.managed_session() as sess:
        for _ in range(5):
            sess.run(train)
        sv.saver.save(sess, sv.save_path, global_step=gs)
    tf.reset_default_graph()
    gs, v, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_model_secs=0, save_summaries_secs=0)
    with sv.managed_session() as sess:
        assert sess.run([gs, v]) == [5, 15.0]


def test_init_feed_dict_and_init_fn_run_on_the_chief(tmp_path):
    p = tf.placeholder(tf.float32, [], name="p")
    v = tf.Variable(p, name="v")
    w = tf.Variable(0.0, name="w")
    assign_w = w.assign(7.0)
    seen = []

    def init_fn(sess):
        seen.append(sess)
        sess.run(assign_w)

    sv = tf.train.Supervisor(logdir=None, init_feed_dict={p: 4.0}, init_fn=init_fn)
    with sv.managed_session() as sess:
        assert sess.run([v, w]) == [4.0, 7.0]
    assert len(seen) == 1


def test_out_of_range_ends_managed_session_cleanly_other_errors_propagate(tmp_path):
    _model()
    sv = tf.train.Supervisor(logdir=None)
    with sv.managed_session():
        raise errors.OutOfRangeError(None, None, "input exhausted")
    assert sv.should_stop()

    with pytest.raises(ValueError, match="boom"):
        with sv.managed_session():
            raise ValueError("boom")


def test_loop_runs_target_until_stop_and_errors_reach_stop():
    _model()
    sv = tf.train.Supervisor(logdir=None)
    calls = []
    ran_twice = threading.Event()

    def target(x):
        calls.append(x)
        if len(calls) >= 2:
            ran_twice.set()

    with sv.managed_session():
        sv.loop(0.01, target, args=("tick",))
        assert ran_twice.wait(30)
    assert set(calls) == {"tick"}

    def failing():
        raise RuntimeError("loop failed")

    with pytest.raises(RuntimeError, match="loop failed"):
        with sv.managed_session():
            sv.loop(None, failing)
            sv.wait_for_stop()


def test_request_stop_from_another_thread():
    _, _, train = _model()
    sv = tf.train.Supervisor(logdir=None)
    with sv.managed_session() as sess:
        threading.Timer(0.05, sv.request_stop).start()
        while not sv.should_stop():
            sess.run(train)
    assert sv.should_stop()


def test_summary_computed_writes_at_the_global_step(tmp_path):
    gs, v, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), save_summaries_secs=0, save_model_secs=0)
    with sv.managed_session() as sess:
        sess.run(train)
        sv.summary_computed(sess, sess.run(sv.summary_op))
    steps = [e.step for e in _events(tmp_path) if e.HasField("summary")]
    assert steps == [1]


def test_summary_computed_without_writer_raises():
    _model()
    sv = tf.train.Supervisor(logdir=None)
    with sv.managed_session() as sess:
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            sv.summary_computed(sess, b"")


def test_non_chief_requires_placed_variables():
    _model()
    with pytest.raises(ValueError, match="all Variables must have their device set"):
        tf.train.Supervisor(is_chief=False)


def test_non_chief_waits_and_times_out_naming_uninitialized_variables():
    with tf.device(_CPU):
        _model()
    sv = tf.train.Supervisor(is_chief=False, recovery_wait_secs=0.01)
    with pytest.raises(errors.DeadlineExceededError, match="global_step"):
        sv.prepare_or_wait_for_session(max_wait_secs=0.1)


def test_start_standard_services_is_for_the_chief(tmp_path):
    with tf.device(_CPU):
        _model()
    sv = tf.train.Supervisor(is_chief=False, logdir=str(tmp_path))
    with pytest.raises(RuntimeError, match="Only chief"):
        sv.start_standard_services(None)


def test_start_queue_runners_uses_the_supervisor_coordinator():
    _model()

    class Runner:
        def create_threads(self, sess, coord=None, daemon=False, start=False):
            self.args = (sess, coord, daemon, start)
            return ["thread"]

    sv = tf.train.Supervisor(logdir=None)
    r = Runner()
    with sv.managed_session(start_standard_services=False) as sess:
        assert sv.start_queue_runners(sess, [r]) == ["thread"]
    assert r.args == (sess, sv.coord, True, True)


def test_camel_case_aliases():
    assert tf.train.Supervisor.PrepareSession is tf.train.Supervisor.prepare_or_wait_for_session
    assert tf.train.Supervisor.ShouldStop is tf.train.Supervisor.should_stop
    assert tf.train.Supervisor.USE_DEFAULT == 0


def test_an_explicit_graph_is_used_and_finalized(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        gs, v, train = _model()
    sv = tf.train.Supervisor(graph=graph, logdir=str(tmp_path), save_model_secs=0,
                             save_summaries_secs=0)
    assert graph.finalized and not tf.get_default_graph().finalized
    assert sv.global_step is gs and graph.get_collection(tf.GraphKeys.INIT_OP) == [sv.init_op]
    with sv.managed_session() as sess:
        sess.run(train)
        assert sess.run(v) == 11.0
