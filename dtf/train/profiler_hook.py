"""tf.train.ProfilerHook: every N steps or seconds, traces a run (FULL_TRACE, step stats from
every task of the step), writes it as a Chrome trace ``timeline-<global step>.json`` into
``output_dir`` and adds its run metadata to that directory's event file (TensorBoard)."""
from __future__ import annotations

import logging
import os

from dtf.train.basic_session_run_hooks import SecondOrStepTimer, _require_global_step, _summary_writer
from dtf.train.session_run_hook import SessionRunArgs, SessionRunHook

__all__ = ["ProfilerHook"]

log = logging.getLogger("dtf")


class ProfilerHook(SessionRunHook):
    """Captures a Chrome trace of a run every ``save_steps`` steps or ``save_secs`` seconds."""

    def __init__(self, save_steps=None, save_secs=None, output_dir="", show_dataflow=True,
                 show_memory=False):
        if show_memory:  # refused now, not at the first trace hours into training
            raise NotImplementedError("ProfilerHook: show_memory=True is not supported (dtf's step "
                                      "stats record no tensor allocations to draw)")
        self._output_dir = output_dir
        self._output_file = os.path.join(output_dir, "timeline-{}.json")
        self._file_writer = None
        self._show_dataflow = show_dataflow
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        self._next_step = None
        self._global_step_tensor = _require_global_step("ProfilerHook")
        self._file_writer = _summary_writer(self._output_dir)

    def before_run(self, run_context):
        from dtf.client.config import RunOptions

        self._request_summary = (self._next_step is not None
                                 and self._timer.should_trigger_for_step(self._next_step))
        options = RunOptions(trace_level=RunOptions.FULL_TRACE) if self._request_summary else None
        return SessionRunArgs({"global_step": self._global_step_tensor}, options=options)

    def after_run(self, run_context, run_values):
        stale_global_step = run_values.results["global_step"]
        if self._next_step is None:
            # The first run only starts the timer: the first trace comes N steps or seconds on.
            self._timer.update_last_triggered_step(stale_global_step)
        global_step = stale_global_step + 1
        if self._request_summary:
            global_step = run_context.session.run(self._global_step_tensor)
            self._timer.update_last_triggered_step(global_step)
            self._save(global_step, self._output_file.format(global_step), run_values.run_metadata.step_stats)
            self._file_writer.add_run_metadata(run_values.run_metadata, f"step_{global_step}")
        self._next_step = global_step + 1

    def _save(self, step, save_path, step_stats):
        from dtf.client.timeline import Timeline
        from dtf.io.gfile import GFile

        log.info("Saving timeline for %d into '%s'.", step, save_path)
        with GFile(save_path, "w") as f:
            f.write(Timeline(step_stats).generate_chrome_trace_format(show_dataflow=self._show_dataflow))
