"""Progress of a training job for ``dtf run``: the global step after each run and every
checkpoint written, sent through dtf.progress (rate-limited there), and for ``dtf run
--trace STEP`` the Chrome trace of that global step. Nothing is added when the job does not
run under ``dtf run`` ($DTF_PROGRESS unset)."""
from __future__ import annotations

import os
import tempfile

from dtf.train.basic_session_run_hooks import CheckpointSaverListener, StopAtStepHook
from dtf.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["ProgressHook", "ProgressCheckpointListener", "TraceStepHook"]

_ENV = "DTF_PROGRESS"
# Set by ``dtf run --trace STEP``: the global step to trace, and the file its trace goes to.
TRACE_STEP_ENV = "DTF_TRACE_STEP"
TRACE_OUT_ENV = "DTF_TRACE_OUT"


def _report(kind, **fields):
    try:
        from dtf import progress
    except ImportError:
        return False
    return progress.report(kind, **fields)


class ProgressHook(SessionRunHook):
    """Reports the global step (and the last step, when a StopAtStepHook knows it) after
    each run, plus this replica's own step count."""

    def __init__(self, stop_hooks=()):
        self._stop_hooks = list(stop_hooks)
        self._local_step = 0

    def begin(self):
        from dtf.train import training_util

        self._global_step_tensor = training_util.get_global_step()

    def before_run(self, run_context):
        return None if self._global_step_tensor is None else SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context, run_values):
        self._local_step += 1
        if run_values.results is None:
            return
        fields = {"global_step": int(run_values.results) + 1, "local_step": self._local_step}
        last_steps = [h.last_step for h in self._stop_hooks if h.last_step is not None]
        if last_steps:
            fields["last_step"] = int(min(last_steps))
        _report("step", **fields)


class ProgressCheckpointListener(CheckpointSaverListener):
    """Reports each checkpoint the CheckpointSaverHook writes into ``checkpoint_dir``."""

    def __init__(self, checkpoint_dir):
        self._checkpoint_dir = checkpoint_dir

    def after_save(self, session, global_step_value):
        from dtf.train.saver import latest_checkpoint

        _report("checkpoint", path=latest_checkpoint(self._checkpoint_dir),
                global_step=int(global_step_value))


class TraceStepHook(SessionRunHook):
    """Traces this replica's first run at or after global step ``step`` (RunOptions
    FULL_TRACE: step stats from every task of the step) and writes it as a Chrome trace to
    ``path``. Replicas race for the same step: the first whose file lands at ``path`` (a
    hard link, which never replaces) wins; the others' traces are dropped. A run's global
    step is the one ProgressHook reports for it: the value it read, plus one."""

    def __init__(self, step: int, path: str):
        self._step, self._path = int(step), path
        self._next = None  # the global step this replica's next run makes
        self._done = False

    def begin(self):
        from dtf.train import training_util

        self._global_step_tensor = training_util.get_global_step()

    def after_create_session(self, session, coord):
        if self._global_step_tensor is not None:
            self._next = int(session.run(self._global_step_tensor)) + 1

    def before_run(self, run_context):
        from dtf.client.config import RunOptions

        if self._done or self._global_step_tensor is None:
            return None
        if self._next is None or self._next < self._step:
            return SessionRunArgs(self._global_step_tensor)
        return SessionRunArgs(self._global_step_tensor,
                              options=RunOptions(trace_level=RunOptions.FULL_TRACE))

    def after_run(self, run_context, run_values):
        if run_values.results is None:  # traced already: asked for nothing
            return
        step = int(run_values.results) + 1
        traced = run_values.options is not None and run_values.options.trace_level > 0
        if traced and not self._done:
            self._done = True
            if self._write(run_values.run_metadata):
                _report("trace", path=self._path, global_step=step)
        self._next = step + 1

    def _write(self, run_metadata) -> bool:
        """Writes the trace beside ``path`` and links it there unless a replica did first."""
        from dtf.client.timeline import Timeline

        text = Timeline(run_metadata.step_stats).generate_chrome_trace_format()
        folder = os.path.dirname(os.path.abspath(self._path))
        fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, self._path)
            except FileExistsError:
                return False
            return True
        finally:
            os.unlink(tmp)


def _enabled():
    return bool(os.environ.get(_ENV))


def progress_hooks(hooks):
    """[ProgressHook] watching ``hooks``' StopAtStepHooks, or [] without a collector."""
    if not _enabled():
        return []
    added = [ProgressHook([h for h in hooks if isinstance(h, StopAtStepHook)])]
    trace_step, trace_out = os.environ.get(TRACE_STEP_ENV), os.environ.get(TRACE_OUT_ENV)
    if trace_step and trace_out:
        added.append(TraceStepHook(int(trace_step), trace_out))
    return added


def checkpoint_listeners(checkpoint_dir):
    return [ProgressCheckpointListener(checkpoint_dir)] if _enabled() else []
