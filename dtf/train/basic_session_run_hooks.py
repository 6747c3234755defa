"""The standard hooks of tf.train, with TF1's arguments, defaults and triggering rules."""
from __future__ import annotations

import logging
import os
import time

import numpy as np

from dtf.framework import errors
from dtf.framework import ops as _ops
from dtf.train import training_util
from dtf.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["SecondOrStepTimer", "StopAtStepHook", "CheckpointSaverListener", "CheckpointSaverHook",
           "StepCounterHook", "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook",
           "SummarySaverHook", "GlobalStepWaiterHook", "FinalOpsHook", "FeedFnHook"]

log = logging.getLogger("dtf")


class SecondOrStepTimer:
    """Triggers every N seconds or every N steps (exactly one of them)."""

    def __init__(self, every_secs=None, every_steps=None):
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_steps and every_secs should be provided.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self):
        self._last_triggered_step = None
        self._last_triggered_time = None

    def should_trigger_for_step(self, step):
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_triggered_time + self._every_secs
        return step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step):
        """Records a trigger at ``step``; returns (seconds, steps) since the previous one."""
        now = time.time()
        if self._last_triggered_time is None:
            elapsed = (None, None)
        else:
            elapsed = (now - self._last_triggered_time, step - self._last_triggered_step)
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed

    def last_triggered_step(self):
        return self._last_triggered_step


def _require_global_step(hook_name):
    step = training_util.get_global_step()
    if step is None:
        raise RuntimeError(f"Global step should be created to use {hook_name}.")
    return step


def _as_graph_element(obj):
    """A tensor for a tensor or a tensor name (``"loss"`` means ``"loss:0"``)."""
    graph = _ops.get_default_graph()
    if not isinstance(obj, str):
        if getattr(obj, "graph", graph) is not graph:
            raise ValueError(f"Passed {obj} should have graph attribute that is equal to current graph {graph}.")
        return obj
    name = obj if ":" in obj else obj + ":0"
    return graph.as_graph_element(name)


class StopAtStepHook(SessionRunHook):
    """Requests a stop at ``last_step`` or after ``num_steps`` more global steps."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    @property
    def last_step(self):
        """The step training stops at (known once a session exists when num_steps is used)."""
        return self._last_step

    def begin(self):
        self._global_step_tensor = _require_global_step("StopAtStepHook")

    def after_create_session(self, session, coord):
        global_step = session.run(self._global_step_tensor)
        if self._last_step is None:
            self._last_step = global_step + self._num_steps
        elif global_step >= self._last_step:
            # Beyond TF1: a session restored at the last step runs no further step.
            coord.request_stop()

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if run_values.results + 1 >= self._last_step:
            # The fetched value may predate this run's update: read it again to be sure.
            if run_context.session.run(self._global_step_tensor) >= self._last_step:
                run_context.request_stop()


class CheckpointSaverListener:
    """Called by CheckpointSaverHook around each save; ``after_save`` returning True stops
    training."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


def _summary_writer(output_dir):
    from dtf.summary.writer import FileWriterCache

    return FileWriterCache.get(output_dir)


class CheckpointSaverHook(SessionRunHook):
    """Saves checkpoints every N steps or seconds, when the session is created, and at end."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])
        self._save_graph_def = save_graph_def
        self._summary_writer = None

    def begin(self):
        self._summary_writer = _summary_writer(self._checkpoint_dir)
        self._global_step_tensor = _require_global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        global_step = session.run(self._global_step_tensor)
        if self._save_graph_def:
            self._write_graph_and_meta_graph()
        # The state at creation: a restarted job can always restore something.
        self._save(session, global_step)
        self._timer.update_last_triggered_step(global_step)

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(run_values.results + 1):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                self._timer.update_last_triggered_step(global_step)
                if self._save(run_context.session, global_step):
                    run_context.request_stop()

    def end(self, session):
        last_step = session.run(self._global_step_tensor)
        if last_step != self._timer.last_triggered_step():
            self._save(session, last_step)
        for listener in self._listeners:
            listener.end(session, last_step)

    def _write_graph_and_meta_graph(self):
        """As TF: graph.pbtxt in the checkpoint directory, the graph and the meta graph in
        its event file (TensorBoard's Graphs tab)."""
        from dtf.framework.graph_io import graph_def
        from dtf.train.graph_io import write_graph
        from dtf.train.meta_graph import export_meta_graph

        graph = _ops.get_default_graph()
        write_graph(graph_def(graph, skip_unencodable=True, add_shapes=True),
                    self._checkpoint_dir, "graph.pbtxt")
        self._summary_writer.add_graph(graph)
        saver = self._get_saver()
        try:
            meta = export_meta_graph(graph=graph, saver_def=saver.saver_def if saver else None)
        except (TypeError, ValueError, NotImplementedError) as e:
            log.warning("No meta graph in the event file: %s", e)
            return
        self._summary_writer.add_meta_graph(meta)

    def _save(self, session, step):
        """Saves; returns whether a listener asked to stop."""
        from dtf.summary.proto import SessionLog

        log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=int(step),
                               write_meta_graph=self._save_graph_def)
        self._summary_writer.add_session_log(
            SessionLog(status=SessionLog.CHECKPOINT, checkpoint_path=self._save_path), step)
        stop = [listener.after_save(session, step) for listener in self._listeners]
        return any(stop)

    def _get_saver(self):
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = _ops.get_collection(_ops.GraphKeys.SAVERS)
        if not savers:
            raise RuntimeError("No items in collection savers. Please add a saver to the collection.")
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection savers. Please indicate which one to use "
                               "by passing it to the constructor.")
        self._saver = savers[0]
        return savers[0]


class StepCounterHook(SessionRunHook):
    """Logs and writes the "global_step/sec" summary every N steps or seconds."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None, summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._last_global_step = None

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer(self._output_dir)
        self._global_step_tensor = _require_global_step("StepCounterHook")
        self._summary_tag = self._global_step_tensor.op.name + "/sec"

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results
        if self._timer.should_trigger_for_step(stale_global_step + 1):
            global_step = run_context.session.run(self._global_step_tensor)
            if self._timer.should_trigger_for_step(global_step):
                elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(global_step)
                if elapsed_time is not None and elapsed_time > 0:
                    self._log_and_record(elapsed_steps / elapsed_time, global_step)
        self._last_global_step = stale_global_step

    def _log_and_record(self, steps_per_sec, global_step):
        from dtf.summary.proto import Summary, SummaryValue

        log.info("%s: %g", self._summary_tag, steps_per_sec)
        if self._summary_writer is not None:
            summary = Summary(value=[SummaryValue(tag=self._summary_tag, simple_value=steps_per_sec)])
            self._summary_writer.add_summary(summary, global_step)


class LoggingTensorHook(SessionRunHook):
    """Logs the values of tensors every N local steps, every N seconds, and/or at the end."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None):
        only_log_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_log_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            self._tag_order = list(tensors)
            tensors = {item: item for item in tensors}
        else:
            self._tag_order = sorted(tensors)
        self._tensors = tensors
        self._formatter = formatter
        self._timer = None if only_log_at_end else SecondOrStepTimer(every_secs=every_n_secs,
                                                                      every_steps=every_n_iter)
        self._log_at_end = at_end

    def begin(self):
        if self._timer is not None:
            self._timer.reset()
        self._iter_count = 0
        self._current_tensors = {tag: _as_graph_element(t) for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = (self._timer is not None
                                and self._timer.should_trigger_for_step(self._iter_count))
        return SessionRunArgs(self._current_tensors) if self._should_trigger else None

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log_tensors(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_tensors(session.run(self._current_tensors))

    def _log_tensors(self, tensor_values):
        elapsed = None
        if self._timer is not None:
            elapsed, _ = self._timer.update_last_triggered_step(self._iter_count)
        if self._formatter:
            log.info(self._formatter(tensor_values))
            return
        text = ", ".join(f"{tag} = {tensor_values[tag]}" for tag in self._tag_order)
        if elapsed is not None:
            text += f" ({elapsed:.3f} sec)"
        log.info("%s", text)


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Fails (or only stops) when the loss becomes NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results):
            message = "Model diverged with loss = NaN."
            if self._fail_on_nan_loss:
                log.error(message)
                raise NanLossDuringTrainingError
            log.warning(message)
            run_context.request_stop()


class SummarySaverHook(SessionRunHook):
    """Evaluates summary ops every N steps or seconds and writes them to an event file."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op = summary_op
        self._summary_writer = summary_writer
        self._output_dir = output_dir
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        if self._summary_writer is None and self._output_dir:
            self._summary_writer = _summary_writer(self._output_dir)
        self._next_step = None
        self._global_step_tensor = _require_global_step("SummarySaverHook")

    def before_run(self, run_context):
        self._request_summary = self._next_step is None or self._timer.should_trigger_for_step(self._next_step)
        requests = {"global_step": self._global_step_tensor}
        summary_ops = self._get_summary_op()
        if self._request_summary and summary_ops:
            requests["summary"] = summary_ops
        return SessionRunArgs(requests)

    def after_run(self, run_context, run_values):
        if not self._summary_writer:
            return
        global_step = run_values.results["global_step"] + 1
        if self._next_step is None or self._request_summary:
            global_step = run_context.session.run(self._global_step_tensor)
        if self._next_step is None:
            from dtf.summary.proto import SessionLog

            self._summary_writer.add_session_log(SessionLog(status=SessionLog.START), global_step)
        if self._request_summary:
            self._timer.update_last_triggered_step(global_step)
            for summary in run_values.results.get("summary", []):
                self._summary_writer.add_summary(summary, global_step)
        self._next_step = global_step + 1

    def end(self, session=None):
        if self._summary_writer:
            self._summary_writer.flush()

    def _get_summary_op(self):
        op = self._summary_op if self._summary_op is not None else self._scaffold.summary_op
        if op is None:
            return None
        return list(op) if isinstance(op, (list, tuple)) else [op]


class GlobalStepWaiterHook(SessionRunHook):
    """Holds this worker's first run until the global step reaches ``wait_until_step``."""

    _POLL_SECS = 0.5
    _LOG_EVERY_SECS = 30

    def __init__(self, wait_until_step):
        self._wait_until_step = wait_until_step

    def begin(self):
        self._worker_is_started = False
        self._global_step_tensor = _require_global_step("GlobalStepWaiterHook")

    def before_run(self, run_context):
        if self._worker_is_started:
            return None
        if self._wait_until_step <= 0:
            self._worker_is_started = True
            return None
        log.info("Waiting for global step %d before starting training.", self._wait_until_step)
        last_logged = None
        while True:
            current_step = training_util.global_step(run_context.session, self._global_step_tensor)
            if current_step >= self._wait_until_step:
                self._worker_is_started = True
                return None
            if last_logged != current_step and (last_logged is None or time.time() - self._logged_at
                                                >= self._LOG_EVERY_SECS):
                log.info("Waiting for global step %d before starting training. Current step is %d.",
                         self._wait_until_step, current_step)
                last_logged, self._logged_at = current_step, time.time()
            time.sleep(self._POLL_SECS)


class FinalOpsHook(SessionRunHook):
    """Runs ``final_ops`` when the session ends; their values are ``final_ops_values``."""

    def __init__(self, final_ops, final_ops_feed_dict=None):
        self._final_ops = final_ops
        self._final_ops_feed_dict = final_ops_feed_dict
        self._final_ops_values = None

    @property
    def final_ops_values(self):
        return self._final_ops_values

    def end(self, session):
        if self._final_ops is None:
            return
        try:
            self._final_ops_values = session.run(self._final_ops, feed_dict=self._final_ops_feed_dict)
        except (errors.OutOfRangeError, StopIteration) as e:
            log.warning("An OutOfRangeError or StopIteration exception is raised by the code in "
                        "FinalOpsHook: the final ops did not run to completion (%s).", e)
            raise


class FeedFnHook(SessionRunHook):
    """Adds ``feed_fn()``'s feeds to every run."""

    def __init__(self, feed_fn):
        self.feed_fn = feed_fn

    def before_run(self, run_context):
        return SessionRunArgs(fetches=None, feed_dict=self.feed_fn())
