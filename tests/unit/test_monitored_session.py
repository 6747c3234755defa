"""MonitoredSession, MonitoredTrainingSession, Scaffold and SessionManager on local sessions."""
from __future__ import annotations

import logging

import pytest

import dtf as tf
from dtf.framework import errors
from dtf.train import monitored_session


def _model():
    gs = tf.train.get_or_create_global_step()
    v = tf.Variable(10.0, name="v")
    train = tf.group(tf.assign_add(gs, 1), tf.assign_add(v, 1.0))
    return gs, v, train


class RecordingHook(tf.train.SessionRunHook):
    def __init__(self, name, calls, fetch=None):
        self.name, self.calls, self.fetch = name, calls, fetch
        self.results = []

    def begin(self):
        self.calls.append((self.name, "begin", tf.get_default_graph().finalized))

    def after_create_session(self, session, coord):
        self.calls.append((self.name, "after_create_session", tf.get_default_graph().finalized))

    def before_run(self, run_context):
        self.calls.append((self.name, "before_run"))
        return tf.train.SessionRunArgs(self.fetch) if self.fetch is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, "after_run"))
        self.results.append(run_values.results)

    def end(self, session):
        self.calls.append((self.name, "end"))


def test_initializes_runs_hooks_in_order_and_finalizes_graph():
    gs, v, train = _model()
    calls = []
    a, b = RecordingHook("a", calls, fetch=v), RecordingHook("b", calls)
    with tf.train.MonitoredSession(hooks=[a, b]) as sess:
        assert tf.get_default_graph().finalized
        assert sess.run(v) == 10.0
    assert not tf.get_default_graph().finalized  # restored as it was before
    assert calls == [("a", "begin", False), ("b", "begin", False),
                     ("a", "after_create_session", True), ("b", "after_create_session", True),
                     ("a", "before_run"), ("b", "before_run"), ("a", "after_run"), ("b", "after_run"),
                     ("a", "end"), ("b", "end")]
    assert a.results == [10.0] and b.results == [None]


def test_hook_request_stop_and_should_stop():
    _, _, train = _model()

    class StopAfterTwo(tf.train.SessionRunHook):
        n = 0

        def after_run(self, run_context, run_values):
            self.n += 1
            if self.n == 2:
                run_context.request_stop()

    with tf.train.MonitoredSession(hooks=[StopAfterTwo()]) as sess:
        sess.run(train)
        assert not sess.should_stop()
        sess.run(train)
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="should_stop"):
            sess.run(train)


def test_end_not_called_on_error_and_out_of_range_is_swallowed():
    _model()
    calls = []
    with pytest.raises(ValueError):
        with tf.train.MonitoredSession(hooks=[RecordingHook("a", calls)]):
            raise ValueError("boom")
    assert ("a", "end") not in calls
    with tf.train.MonitoredSession(hooks=[RecordingHook("a", calls)]):
        raise errors.OutOfRangeError(None, None, "input exhausted")
    assert calls[-1] == ("a", "end")


def test_close_twice_is_an_error():
    _model()
    sess = tf.train.MonitoredSession()
    sess.close()
    assert sess.should_stop()
    with pytest.raises(RuntimeError, match="already closed"):
        sess.close()


def test_run_step_fn_session_run_with_hooks_and_request_stop():
    gs, v, train = _model()
    calls = []
    with tf.train.MonitoredSession(hooks=[RecordingHook("a", calls)]) as sess:
        assert sess.run_step_fn(lambda step_context: step_context.session.run(v)) == 10.0
        assert ("a", "before_run") not in calls  # the raw session bypasses hooks
        sess.run_step_fn(lambda step_context: step_context.run_with_hooks(train))
        assert ("a", "after_run") in calls

        def stop(step_context):
            step_context.request_stop()

        assert sess.run_step_fn(stop) is None
        assert sess.should_stop()
        with pytest.raises(ValueError, match="step_context"):
            sess.run_step_fn(lambda ctx: None)


def test_restores_newest_checkpoint_from_checkpoint_dir(tmp_path):
    gs, v, train = _model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
                                           hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-3")
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        assert sess.run([gs, v]) == [3, 13.0]


def test_stop_at_step_hook_on_a_restored_final_step_runs_nothing(tmp_path):
    gs, _, train = _model()
    for _ in range(2):
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                               hooks=[tf.train.StopAtStepHook(last_step=2)]) as sess:
            while not sess.should_stop():
                sess.run(train)
    assert tf.train.load_variable(str(tmp_path), "global_step") == 2


def test_monitored_training_session_defaults():
    _model()
    sess = tf.train.MonitoredTrainingSession()
    assert [type(h).__name__ for h in sess._hooks] == []
    sess.close()


def test_monitored_training_session_hooks_for_chief_and_worker(tmp_path):
    _model()
    stop = tf.train.StopAtStepHook(last_step=1)
    extra = tf.train.FinalOpsHook(None)
    sess = tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), hooks=[stop],
                                             chief_only_hooks=[extra], save_checkpoint_steps=5)
    hooks = sess._hooks
    assert [type(h).__name__ for h in hooks] == ["FinalOpsHook", "StepCounterHook", "SummarySaverHook",
                                                  "CheckpointSaverHook", "StopAtStepHook"]
    saver_hook = hooks[3]
    assert saver_hook._timer._every_steps == 5 and saver_hook._timer._every_secs is None
    sess.close()


def test_default_checkpoint_period_is_600_secs(tmp_path):
    _model()
    sess = tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=0,
                                             log_step_count_steps=0)
    (hook,) = sess._hooks
    assert hook._timer._every_secs == 600 and hook._timer._every_steps is None
    sess.close()


def test_scaffold_fields_defaults_and_init_fn():
    gs, v, _ = _model()
    loc = tf.Variable(5.0, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    seen = []
    scaffold = tf.train.Scaffold(init_fn=lambda scaffold_, sess: seen.append(scaffold_))
    with tf.train.MonitoredSession(tf.train.ChiefSessionCreator(scaffold=scaffold)) as sess:
        assert sess.run(loc) == 5.0
    assert seen == [scaffold]
    for field in ("init_op", "ready_op", "ready_for_local_init_op", "local_init_op", "saver"):
        assert getattr(scaffold, field) is not None, field
    assert scaffold.summary_op is None  # no summaries in this graph
    copy = tf.train.Scaffold(copy_from_scaffold=scaffold, init_feed_dict={})
    assert copy.init_op is scaffold.init_op and copy.init_feed_dict == {}
    with pytest.raises(TypeError):
        tf.train.Scaffold(copy_from_scaffold=object())


def test_scaffold_custom_init_op_and_two_items_in_a_collection():
    gs, v, _ = _model()
    init = tf.group(tf.assign(v, 42.0), gs.initializer, name="my_init")
    with tf.train.MonitoredSession(tf.train.ChiefSessionCreator(scaffold=tf.train.Scaffold(init_op=init))) as sess:
        assert sess.run(v) == 42.0
    tf.add_to_collection(tf.GraphKeys.READY_OP, tf.constant(1))
    tf.add_to_collection(tf.GraphKeys.READY_OP, tf.constant(2))
    with pytest.raises(RuntimeError, match="More than one item"):
        tf.train.Scaffold().finalize()


def test_singular_monitored_session_raw_session():
    _, v, _ = _model()
    with tf.train.SingularMonitoredSession() as sess:
        assert sess.raw_session().run(v) == 10.0


def test_non_chief_waits_then_times_out_naming_uninitialized_variables(caplog):
    _model()
    creator = tf.train.WorkerSessionCreator(max_wait_secs=0.5)
    with caplog.at_level(logging.INFO, logger="dtf"):
        with pytest.raises(errors.DeadlineExceededError, match="global_step, v"):
            tf.train.MonitoredSession(creator)
    assert any("Waiting for model to be ready" in r.getMessage() and "global_step, v" in r.getMessage()
               for r in caplog.records)


def test_non_chief_never_initializes_and_starts_once_ready():
    gs, v, _ = _model()
    server = tf.train.Server.create_local_server()
    try:
        with tf.Session(server.target) as chief:
            chief.run(tf.global_variables_initializer())
        creator = tf.train.WorkerSessionCreator(master=server.target, max_wait_secs=5)
        with tf.train.MonitoredSession(creator) as sess:
            assert sess.run(v) == 10.0
    finally:
        server.stop()


def test_session_manager_prepare_session_without_init_is_an_error():
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op"):
        tf.train.SessionManager().prepare_session("")


def test_session_manager_ready_op_not_met_names_variables():
    v = tf.Variable(1.0, name="lonely")
    sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    with pytest.raises(RuntimeError, match="Variables not initialized: lonely"):
        sm.prepare_session("", init_op=tf.no_op())


class _FlakySession:
    """Fails the first run with a preemption error, then delegates."""

    def __init__(self, sess, error):
        self._sess, self._error = sess, error

    def run(self, *args, **kwargs):
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._sess.run(*args, **kwargs)

    def close(self):
        self._sess.close()


@pytest.mark.parametrize("error", [errors.AbortedError, errors.UnavailableError])
def test_preemption_error_recreates_the_session_and_restores(tmp_path, error):
    gs, v, train = _model()
    created = []

    class Creator(tf.train.ChiefSessionCreator):
        def create_session(self):
            sess = super().create_session()
            created.append(sess)
            return _FlakySession(sess, error(None, None, "task died") if len(created) == 2 else None)

    with tf.train.MonitoredSession(Creator(checkpoint_dir=str(tmp_path)), hooks=[
            tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1)]) as sess:
        sess.run(train)
        sess.run(train)
        sess._sess.sess._error = error(None, None, "ps restarted")  # the next step is preempted
        sess.run(train)
        # The second session failed while being created and was retried; the third one
        # restored the checkpoint of step 2 and ran the step.
        assert len(created) == 3
        assert sess.run(gs) == 3


def test_recovery_is_bounded(monkeypatch):
    _model()
    monkeypatch.setenv(monitored_session.RECOVERY_TIMEOUT_ENV, "0.3")

    class DeadCreator(tf.train.SessionCreator):
        def create_session(self):
            raise errors.UnavailableError(None, None, "Task /job:ps/replica:0/task:0 is not answering")

    with pytest.raises(errors.UnavailableError, match=r"Gave up .* /job:ps/replica:0/task:0"):
        tf.train.MonitoredSession(DeadCreator())
