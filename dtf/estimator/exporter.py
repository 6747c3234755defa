"""tf.estimator's exporters (TF 1.15): what train_and_evaluate exports after an evaluation,
into ``<model_dir>/export/<exporter name>/<timestamp>``. ``FinalExporter`` exports once, after
the evaluation of the final checkpoint; ``LatestExporter`` after every evaluation, keeping
the newest ``exports_to_keep``."""
from __future__ import annotations

import logging
import os
import shutil

log = logging.getLogger("dtf")

__all__ = ["Exporter", "FinalExporter", "LatestExporter"]


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
        self._garbage_collect(export_path)
        return path

    def _garbage_collect(self, export_path):
        if self._exports_to_keep is None:
            return
        stamps = sorted(int(d) for d in os.listdir(export_path) if d.isdigit())
        for stamp in stamps[:-self._exports_to_keep]:
            shutil.rmtree(os.path.join(export_path, str(stamp)), ignore_errors=True)
