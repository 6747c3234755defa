"""tf.estimator's exporters (TF 1.15): what train_and_evaluate exports after an evaluation,
into ``<model_dir>/export/<exporter name>/<timestamp>``. ``FinalExporter`` exports once, after
the evaluation of the final checkpoint; ``LatestExporter`` after every evaluation, keeping
the newest ``exports_to_keep``; ``BestExporter`` when an evaluation beats the best so far
(which it first reads back from the eval event files, so a restarted job remembers it)."""
from __future__ import annotations

import logging
import os
import shutil

log = logging.getLogger("dtf")

__all__ = ["BestExporter", "Exporter", "FinalExporter", "LatestExporter"]


class Exporter:
    """The base of exporters: a ``name`` and ``export(...)``."""

    @property
    def name(self):
        raise NotImplementedError

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        raise NotImplementedError


class _SavedModelExporter(Exporter):
    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False):
        if not name:
            raise ValueError("`name` must be a non-empty string.")
        self._name = name
        self._serving_input_receiver_fn = serving_input_receiver_fn
        self._assets_extra = assets_extra
        self._as_text = as_text

    @property
    def name(self):
        return self._name

    def _export(self, estimator, export_path, checkpoint_path):
        return estimator.export_saved_model(export_path, self._serving_input_receiver_fn,
                                            assets_extra=self._assets_extra,
                                            as_text=self._as_text,
                                            checkpoint_path=checkpoint_path)


class FinalExporter(_SavedModelExporter):
    """Exports the model of the final evaluation only (the one at train max_steps)."""

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if not is_the_final_export:
            return None
        log.info("Performing the final export in the end of training.")
        return self._export(estimator, export_path, checkpoint_path)


class LatestExporter(_SavedModelExporter):
    """Exports after every evaluation and keeps the newest ``exports_to_keep`` (all when
    None)."""

    def __init__(self, name, serving_input_receiver_fn, assets_extra=None, as_text=False,
                 exports_to_keep=5):
        super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        self._exports_to_keep = exports_to_keep

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        path = self._export(estimator, export_path, checkpoint_path)
        _garbage_collect(export_path, self._exports_to_keep)
        return path


def _garbage_collect(export_path, exports_to_keep):
    """Deletes all but the newest ``exports_to_keep`` timestamped exports (all kept when
    None)."""
    if exports_to_keep is None:
        return
    stamps = sorted(int(d) for d in os.listdir(export_path) if d.isdigit())
    for stamp in stamps[:-exports_to_keep]:
        shutil.rmtree(os.path.join(export_path, str(stamp)), ignore_errors=True)


def _loss_smaller(best_eval_result, current_eval_result):
    """BestExporter's default compare_fn: the current evaluation is better when its loss is
    smaller."""
    if not best_eval_result or "loss" not in best_eval_result:
        raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
    if not current_eval_result or "loss" not in current_eval_result:
        raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
    return best_eval_result["loss"] > current_eval_result["loss"]


def _verify_compare_fn_args(compare_fn):
    from dtf.estimator.estimator import fn_args
    args = set(fn_args(compare_fn))
    if "best_eval_result" not in args:
        raise ValueError(f"compare_fn ({compare_fn}) must include best_eval_result argument.")
    if "current_eval_result" not in args:
        raise ValueError(f"compare_fn ({compare_fn}) must include current_eval_result argument.")
    non_valid_args = list(args - {"best_eval_result", "current_eval_result"})
    if non_valid_args:
        raise ValueError(f"compare_fn ({compare_fn}) has following not expected args: "
                         f"{non_valid_args}")


class BestExporter(Exporter):
    """Exports when ``compare_fn(best_eval_result=, current_eval_result=)`` says an
    evaluation beats the best one seen, keeping the newest ``exports_to_keep`` exports."""

    def __init__(self, name="best_exporter", serving_input_receiver_fn=None,
                 event_file_pattern="eval/*.tfevents.*", compare_fn=_loss_smaller,
                 assets_extra=None, as_text=False, exports_to_keep=5):
        if compare_fn is None:
            raise ValueError("`compare_fn` must not be None.")
        _verify_compare_fn_args(compare_fn)
        self._compare_fn = compare_fn
        self._saved_model_exporter = _SavedModelExporter(name, serving_input_receiver_fn,
                                                         assets_extra, as_text)
        self._event_file_pattern = event_file_pattern
        self._model_dir = None
        self._best_eval_result = None
        self._has_exported = False
        if exports_to_keep is not None and exports_to_keep <= 0:
            raise ValueError("`exports_to_keep`, if provided, must be a positive number. Got "
                             f"{exports_to_keep}")
        self._exports_to_keep = exports_to_keep

    @property
    def name(self):
        return self._saved_model_exporter.name

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        if self._model_dir != estimator.model_dir and self._event_file_pattern:
            log.info("Loading best metric from event files.")
            self._model_dir = estimator.model_dir
            self._best_eval_result = self._get_best_eval_result(
                os.path.join(self._model_dir, self._event_file_pattern))
        # The evaluation writes its summary before the exporters run, so the best result
        # read back may be this very evaluation: then the first export still happens (TF's
        # rule, which compares the dicts as they are).
        if (self._best_eval_result is None
                or (not self._has_exported and self._best_eval_result == eval_result)
                or self._compare_fn(best_eval_result=self._best_eval_result,
                                    current_eval_result=eval_result)):
            log.info("Performing best model export.")
            self._best_eval_result = eval_result
            path = self._saved_model_exporter._export(estimator, export_path, checkpoint_path)
            _garbage_collect(export_path, self._exports_to_keep)
            self._has_exported = True
            return path
        return None

    def _get_best_eval_result(self, pattern):
        """The best of the evaluations (each event's scalar summaries) in the event files."""
        from dtf import gfile
        from dtf.summary.reader import summary_iterator

        best = None
        for event_file in gfile.Glob(pattern):
            for event in summary_iterator(event_file):
                if not event.HasField("summary"):
                    continue
                result = {v.tag: v.simple_value for v in event.summary.value
                          if v.HasField("simple_value")}
                if result and (best is None or self._compare_fn(best, result)):
                    best = result
        return best
