"""The standard hooks, each driven by a local MonitoredSession."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import dtf as tf
from dtf.summary import summary_iterator
from dtf.summary.writer import FileWriterCache


def _counter_model():
    gs = tf.train.get_or_create_global_step()
    v = tf.Variable(1.0, name="v")
    train = tf.group(tf.assign_add(gs, 1), tf.assign_add(v, 1.0))
    return gs, v, train


def _run_until_stop(sess, op, limit=1000):
    n = 0
    while not sess.should_stop() and n < limit:
        sess.run(op)
        n += 1
    return n


def test_timer_needs_exactly_one_and_triggers_by_steps():
    with pytest.raises(ValueError, match="exactly one"):
        tf.train.SecondOrStepTimer()
    timer = tf.train.SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(0)
    assert timer.update_last_triggered_step(0) == (None, None)
    assert not timer.should_trigger_for_step(2) and timer.should_trigger_for_step(3)
    assert timer.update_last_triggered_step(3)[1] == 3 and timer.last_triggered_step() == 3


@pytest.mark.parametrize("kwargs, runs", [({"last_step": 5}, 5), ({"num_steps": 3}, 3)])
def test_stop_at_step_hook(kwargs, runs):
    gs, _, train = _counter_model()
    with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(**kwargs)]) as sess:
        assert _run_until_stop(sess, train) == runs


def test_stop_at_step_hook_argument_rules_and_needs_global_step():
    with pytest.raises(ValueError, match="One of"):
        tf.train.StopAtStepHook()
    with pytest.raises(ValueError, match="Only one"):
        tf.train.StopAtStepHook(num_steps=1, last_step=2)
    tf.Variable(0.0)
    with pytest.raises(RuntimeError, match="Global step should be created to use StopAtStepHook"):
        tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=1)])


def test_checkpoint_saver_hook_saves_at_creation_every_n_steps_and_at_end(tmp_path):
    _, _, train = _counter_model()

    class Listener(tf.train.CheckpointSaverListener):
        def __init__(self):
            self.calls = []

        def begin(self):
            self.calls.append("begin")

        def before_save(self, session, step):
            self.calls.append(("before", step))

        def after_save(self, session, step):
            self.calls.append(("after", step))

        def end(self, session, step):
            self.calls.append(("end", step))

    listener = Listener()
    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[listener])
    with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=5)]) as sess:
        _run_until_stop(sess, train)
    saved = [c[1] for c in listener.calls if c[0] == "after"]
    assert listener.calls[0] == "begin" and saved == [0, 2, 4, 5] and listener.calls[-1] == ("end", 5)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    assert tf.train.load_variable(str(tmp_path), "v") == 6.0


def test_checkpoint_saver_listener_can_stop_training(tmp_path):
    _, _, train = _counter_model()

    class StopAfterFirstPeriodic(tf.train.CheckpointSaverListener):
        def after_save(self, session, step):
            return step >= 3

    hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=3, listeners=[StopAfterFirstPeriodic()])
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        assert _run_until_stop(sess, train) == 3


def test_step_counter_hook_writes_steps_per_second(tmp_path):
    _, _, train = _counter_model()
    hook = tf.train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path))
    with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=6)]) as sess:
        _run_until_stop(sess, train)
    FileWriterCache.clear()
    events = [e for f in tmp_path.glob("events.out.tfevents.*") for e in summary_iterator(str(f))]
    tags = [v.tag for e in events if e.HasField("summary") for v in e.summary.value]
    assert "global_step/sec" in tags


def test_logging_tensor_hook_every_n_iter_and_at_end(caplog):
    gs, v, train = _counter_model()
    seen = []
    hook = tf.train.LoggingTensorHook({"v": v}, every_n_iter=2, at_end=True,
                                      formatter=lambda values: seen.append(float(values["v"])) or "x")
    with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=4)]) as sess:
        _run_until_stop(sess, train)
    assert len(seen) == 3 and seen[-1] == 5.0  # iterations 0 and 2, and at the end
    with pytest.raises(ValueError, match="at_end and/or exactly one"):
        tf.train.LoggingTensorHook({"v": v})
    with pytest.raises(ValueError, match="invalid every_n_iter"):
        tf.train.LoggingTensorHook({"v": v}, every_n_iter=0)


def test_logging_tensor_hook_accepts_names_and_logs(caplog):
    gs, v, train = _counter_model()
    tf.identity(v, name="alias")
    hook = tf.train.LoggingTensorHook(["alias"], every_n_iter=1)
    with caplog.at_level(logging.INFO, logger="dtf"):
        with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=1)]) as sess:
            _run_until_stop(sess, train)
    assert any("alias = " in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fail", [True, False])
def test_nan_tensor_hook(fail):
    _, _, train = _counter_model()
    loss = tf.constant(np.nan)
    hook = tf.train.NanTensorHook(loss, fail_on_nan_loss=fail)
    sess = tf.train.MonitoredSession(hooks=[hook])
    if fail:
        with pytest.raises(tf.train.NanLossDuringTrainingError, match="NaN loss during training"):
            sess.run(train)
    else:
        sess.run(train)
        assert sess.should_stop()
    sess.close()


def test_summary_saver_hook_writes_summaries_every_n_steps(tmp_path):
    gs, v, train = _counter_model()
    tf.summary.scalar("v", v)
    hook = tf.train.SummarySaverHook(save_steps=2, output_dir=str(tmp_path), summary_op=tf.summary.merge_all())
    with tf.train.MonitoredSession(hooks=[hook, tf.train.StopAtStepHook(last_step=5)]) as sess:
        _run_until_stop(sess, train)
    FileWriterCache.clear()
    events = [e for f in tmp_path.glob("events.out.tfevents.*") for e in summary_iterator(str(f))]
    steps = [e.step for e in events if e.HasField("summary")]
    assert steps == [1, 3, 5]
    with pytest.raises(ValueError, match="Exactly one of scaffold or summary_op"):
        tf.train.SummarySaverHook(save_steps=1)


def test_global_step_waiter_hook_waits_for_the_step():
    gs, _, train = _counter_model()
    sess = tf.train.MonitoredSession(hooks=[tf.train.GlobalStepWaiterHook(wait_until_step=0)])
    sess.run(train)
    sess.close()
    tf.reset_default_graph()
    gs, _, train = _counter_model()
    hook = tf.train.GlobalStepWaiterHook(wait_until_step=1)
    hook._POLL_SECS = 0.01
    sess = tf.train.MonitoredSession(hooks=[hook])
    sess._tf_sess().run(train)  # another worker advances the step
    sess.run(train)
    assert hook._worker_is_started
    sess.close()


def test_final_ops_hook_runs_at_end():
    gs, v, train = _counter_model()
    hook = tf.train.FinalOpsHook(v * 10.0)
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        sess.run(train)
        sess.run(train)
    assert hook.final_ops_values == 30.0


def test_feed_fn_hook_feeds_every_run():
    x = tf.placeholder(tf.float32, [])
    y = x * 2.0
    feeds = iter([1.0, 2.0])
    with tf.train.MonitoredSession(hooks=[tf.train.FeedFnHook(lambda: {x: next(feeds)})]) as sess:
        assert [sess.run(y), sess.run(y)] == [2.0, 4.0]


def test_feed_conflict_between_hook_and_user_is_an_error():
    x = tf.placeholder(tf.float32, [])
    y = x * 2.0
    with tf.train.MonitoredSession(hooks=[tf.train.FeedFnHook(lambda: {x: 1.0})]) as sess:
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(y, feed_dict={x: 3.0})


def test_progress_hooks_report_steps_and_checkpoints(tmp_path, monkeypatch):
    from dtf import progress

    reports = []
    monkeypatch.setenv("DTF_PROGRESS", "tcp://127.0.0.1:1")
    monkeypatch.setattr(progress, "report", lambda kind, **f: reports.append((kind, f)))
    _, _, train = _counter_model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=2,
                                           hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
        _run_until_stop(sess, train)
    steps = [f for k, f in reports if k == "step"]
    assert steps and all(f["last_step"] == 3 for f in steps) and steps[-1]["local_step"] == 3
    checkpoints = [f for k, f in reports if k == "checkpoint"]
    assert [c["global_step"] for c in checkpoints] == [0, 2, 3]
    assert checkpoints[-1]["path"].endswith("model.ckpt-3")
