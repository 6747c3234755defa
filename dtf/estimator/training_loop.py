"""The session loops behind Estimator.train and Estimator.evaluate: which hooks run, where
checkpoints and summaries go, and how an evaluation counts its batches (TF 1.15's rules)."""
from __future__ import annotations

import logging
import time

from dtf.estimator.model_fn import LOSS_METRIC_KEY
from dtf.framework import ops as _ops
from dtf.train.session_run_hook import SessionRunArgs, SessionRunHook

log = logging.getLogger("dtf")


def _default_saver(config):
    from dtf.train.saver import Saver

    return Saver(sharded=True, max_to_keep=config.keep_checkpoint_max,
                 keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
                 defer_build=True, save_relative_paths=True)


def train_with_spec(estimator, spec, hooks, global_step, saving_listeners=()):
    """Runs spec.train_op until a hook stops it; returns the last step's loss."""
    from dtf.summary import scalar
    from dtf.train import basic_session_run_hooks as basic
    from dtf.train.monitored_session import MonitoredTrainingSession

    config = estimator._config
    if not any(x.op.name == "loss" for x in _ops.get_collection(_ops.GraphKeys.SUMMARIES)):
        scalar("loss", spec.loss)  # so TensorBoard always shows a 'loss' curve
    _ops.add_to_collection(_ops.GraphKeys.LOSSES, spec.loss)
    worker_hooks = list(hooks)
    worker_hooks.append(basic.NanTensorHook(spec.loss))
    if config.log_step_count_steps is not None:
        worker_hooks.append(basic.LoggingTensorHook(
            {"loss": spec.loss, "step": global_step}, every_n_iter=config.log_step_count_steps))
    worker_hooks.extend(spec.training_hooks)
    if not (spec.scaffold.saver or _ops.get_collection(_ops.GraphKeys.SAVERS)):
        _ops.add_to_collection(_ops.GraphKeys.SAVERS, _default_saver(config))
    chief_hooks = []
    all_hooks = worker_hooks + list(spec.training_chief_hooks)
    saver_hooks = [h for h in all_hooks if isinstance(h, basic.CheckpointSaverHook)]
    if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not saver_hooks:
        chief_hooks.append(basic.CheckpointSaverHook(
            estimator.model_dir, save_secs=config.save_checkpoints_secs,
            save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold))
        saver_hooks = chief_hooks[:]
    if saving_listeners:
        if not saver_hooks:
            raise ValueError(
                "There should be a CheckpointSaverHook to use saving_listeners. Please set one of "
                "the RunConfig.save_checkpoints_steps or RunConfig.save_checkpoints_secs.")
        for listener in saving_listeners:  # TF: the first saver hook gets them
            if listener not in saver_hooks[0]._listeners:
                saver_hooks[0]._listeners.append(listener)
    save_summary_steps = config.save_summary_steps
    log_step_count_steps = config.log_step_count_steps
    jobs = config.cluster_spec.jobs if config.cluster_spec else []
    if "worker" in jobs and "master" in jobs:
        # TF: with a master that also evaluates, worker 0 writes the summaries instead.
        save_summary_steps, log_step_count_steps = 0, None
        if config.task_type == "worker" and config.task_id == 0:
            if config.save_summary_steps and config.save_summary_steps > 0:
                worker_hooks.append(basic.SummarySaverHook(
                    save_steps=config.save_summary_steps, output_dir=config.model_dir,
                    scaffold=spec.scaffold))
            if config.log_step_count_steps and config.log_step_count_steps > 0:
                worker_hooks.append(basic.StepCounterHook(
                    every_n_steps=config.log_step_count_steps, output_dir=config.model_dir))
    with MonitoredTrainingSession(
            master=config.master, is_chief=config.is_chief, checkpoint_dir=estimator.model_dir,
            scaffold=spec.scaffold, hooks=worker_hooks,
            chief_only_hooks=tuple(chief_hooks) + tuple(spec.training_chief_hooks),
            save_checkpoint_secs=0,  # the CheckpointSaverHook above saves
            save_summaries_steps=save_summary_steps, config=estimator._session_config,
            max_wait_secs=config.session_creation_timeout_secs,
            log_step_count_steps=log_step_count_steps) as sess:
        loss = None
        any_step_done = False
        while not sess.should_stop():
            _, loss = sess.run([spec.train_op, spec.loss])
            any_step_done = True
    if not any_step_done:
        log.warning("Training with estimator made no steps. Perhaps input is empty or "
                    "misspecified.")
    return loss


def _get_or_create_eval_step():
    """The local int64 variable counting evaluation batches (collection EVAL_STEP)."""
    from dtf.framework import dtypes
    from dtf.ops import init_ops, variable_scope as vs

    graph = _ops.get_default_graph()
    existing = graph.get_collection(_ops.GraphKeys.EVAL_STEP)
    if len(existing) == 1:
        return existing[0]
    if len(existing) > 1:
        raise ValueError("Multiple tensors added to tf.GraphKeys.EVAL_STEP")
    return vs.get_variable(
        "eval_step", shape=[], dtype=dtypes.int64, initializer=init_ops.zeros_initializer(),
        trainable=False, collections=[_ops.GraphKeys.LOCAL_VARIABLES, _ops.GraphKeys.EVAL_STEP])


class _StopAfterNEvalsHook(SessionRunHook):
    """Stops the evaluation after num_evals batches (read from the eval step)."""

    def __init__(self, num_evals, evals_completed):
        self._num_evals = num_evals
        self._evals_completed = evals_completed

    def before_run(self, run_context):
        return SessionRunArgs({"evals_completed": self._evals_completed})

    def after_run(self, run_context, run_values):
        if run_values.results["evals_completed"] >= self._num_evals:
            run_context.request_stop()


def _write_dict_to_summary(output_dir, dictionary, current_global_step):
    """Writes the eval results as one Summary at current_global_step, by TF's rules: floats
    and ints as scalars, arrays as tensors, bytes as serialized Summaries."""
    import numpy as np

    from dtf.framework import dtypes
    from dtf.kernels.cpu.summary_media import tensor_proto
    from dtf.summary.proto import Summary

    summary = Summary()
    for key, value in dictionary.items():
        if value is None or key == "global_step":
            continue
        if isinstance(value, (np.float32, float)):
            summary.value.add(tag=key, simple_value=float(value))
        elif isinstance(value, (np.int64, np.int32, int)):
            summary.value.add(tag=key, simple_value=int(value))
        elif isinstance(value, bytes):
            try:
                parsed = Summary.FromString(value)
            except Exception:  # noqa: BLE001 - TF skips what does not parse
                log.warning("Skipping summary for %s, cannot parse string to Summary.", key)
                continue
            for i, v in enumerate(parsed.value):
                v.tag = f"{key}/{i}"
                summary.value.append(v)
        elif isinstance(value, np.ndarray):
            summary.value.add(tag=key, node_name=key,
                              tensor=tensor_proto(value, dtypes.as_dtype(value.dtype)))
        else:
            log.warning("Skipping summary for %s, must be a float, np.float32, np.int64, "
                        "np.int32 or int or np.ndarray or a serialized string of Summary.", key)
    _add_summary(output_dir, summary, current_global_step)


def _write_checkpoint_path_to_summary(output_dir, checkpoint_path, current_global_step):
    """TF also records which checkpoint was evaluated, as a string tensor summary."""
    import numpy as np

    from dtf.framework import dtypes
    from dtf.kernels.cpu.summary_media import tensor_proto
    from dtf.summary.proto import Summary

    summary = Summary()
    summary.value.add(tag="checkpoint_path", tensor=tensor_proto(
        np.array(checkpoint_path.encode("utf-8"), dtype=object), dtypes.string))
    _add_summary(output_dir, summary, current_global_step)


def _add_summary(output_dir, summary, step):
    from dtf.summary.writer import FileWriterCache

    writer = FileWriterCache.get(output_dir)
    writer.add_summary(summary, int(step))
    writer.flush()


def evaluate_with_spec(estimator, spec, hooks, steps, checkpoint_path, output_dir):
    """Runs the metrics' update ops over the eval data, then their values once: the dict
    evaluate() returns (also written as summaries into output_dir)."""
    from dtf.metrics import mean
    from dtf.ops import array_ops, control_flow_ops, state_ops
    from dtf.train.basic_session_run_hooks import FinalOpsHook
    from dtf.train.monitored_session import ChiefSessionCreator, MonitoredSession, Scaffold
    from dtf.train.training_util import get_global_step

    eval_metric_ops = dict(spec.eval_metric_ops)
    if LOSS_METRIC_KEY in eval_metric_ops:
        raise ValueError(f'Metric with name "{LOSS_METRIC_KEY}" is not allowed, because '
                         "Estimator already defines a default metric with the same name.")
    eval_metric_ops[LOSS_METRIC_KEY] = mean(spec.loss)
    values, update_ops = {}, []
    for name, (value, update) in sorted(eval_metric_ops.items()):  # a stable graph order
        values[name] = value
        update_ops.append(update)
    if "global_step" in values:
        raise ValueError("Metric with name `global_step` is not allowed, because Estimator "
                         "already defines a default metric with the same name.")
    values["global_step"] = get_global_step()
    eval_step = _get_or_create_eval_step()
    scaffold = spec.scaffold
    if scaffold.local_init_op is not None:
        scaffold = Scaffold(local_init_op=control_flow_ops.group(
            scaffold.local_init_op, Scaffold.default_local_init_op()),
            copy_from_scaffold=scaffold)
    with _ops.control_dependencies(update_ops):
        update_eval_step = state_ops.assign_add(eval_step, 1, use_locking=True)
    with _ops.control_dependencies([update_eval_step]):
        evals_completed = array_ops.identity(eval_step.read_value())
    hooks = list(hooks) + list(spec.evaluation_hooks)
    if steps is not None:
        hooks.append(_StopAfterNEvalsHook(steps, evals_completed))
    final_ops_hook = FinalOpsHook(values)
    hooks.append(final_ops_hook)
    log.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    creator = ChiefSessionCreator(scaffold=scaffold, checkpoint_filename_with_path=checkpoint_path,
                                  master=estimator._config.evaluation_master,
                                  config=estimator._session_config)
    with MonitoredSession(session_creator=creator, hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(evals_completed)
    results = final_ops_hook.final_ops_values
    _write_dict_to_summary(output_dir, results, results["global_step"])
    _report_eval(results)
    if checkpoint_path:
        _write_checkpoint_path_to_summary(output_dir, checkpoint_path, results["global_step"])
    return results


def _report_eval(results):
    """Sends the scalar metrics to `dtf run`'s live view (a no-op outside `dtf run`)."""
    import numpy as np

    from dtf import progress

    metrics = {}
    for key, value in results.items():
        arr = np.asarray(value)
        if key != "global_step" and arr.size == 1 and arr.dtype.kind in "biuf":
            metrics[key] = float(arr)
    progress.report("eval", global_step=int(results["global_step"]), metrics=metrics)
