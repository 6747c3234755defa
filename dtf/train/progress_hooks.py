"""Progress of a training job for ``dtf run``: the global step after each run and every
checkpoint written, sent through dtf.progress (rate-limited there). Nothing is added when
the job does not run under ``dtf run`` ($DTF_PROGRESS unset)."""
from __future__ import annotations

import os

from dtf.train.basic_session_run_hooks import CheckpointSaverListener, StopAtStepHook
from dtf.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["ProgressHook", "ProgressCheckpointListener"]

_ENV = "DTF_PROGRESS"


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


def _enabled():
    return bool(os.environ.get(_ENV))


def progress_hooks(hooks):
    """[ProgressHook] watching ``hooks``' StopAtStepHooks, or [] without a collector."""
    if not _enabled():
        return []
    return [ProgressHook([h for h in hooks if isinstance(h, StopAtStepHook)])]


def checkpoint_listeners(checkpoint_dir):
    return [ProgressCheckpointListener(checkpoint_dir)] if _enabled() else []
