"""tf.estimator.train_and_evaluate with TrainSpec and EvalSpec: each task does its TF_CONFIG
role (TF 1.15's _TrainingExecutor). Locally (no cluster) it trains and evaluates after each
checkpoint, at most once per throttle_secs; on a cluster the chief and workers train
between-graph with the variables on the ps tasks, the ps tasks serve, and the evaluator
evaluates every new checkpoint until the global step reaches TrainSpec.max_steps."""
from __future__ import annotations

import collections
import logging
import os
import time

from dtf.estimator.model_fn import validate_hooks
from dtf.estimator.run_config import TaskType
from dtf.framework import errors
from dtf.train.basic_session_run_hooks import CheckpointSaverListener, SecondOrStepTimer
from dtf.train.saver import checkpoint_exists

__all__ = ["TrainSpec", "EvalSpec", "train_and_evaluate"]

log = logging.getLogger("dtf")

_DELAY_SECS_PER_WORKER = 5  # TF: worker k starts (k+1) * 5 s after the chief...
_MAX_DELAY_SECS = 60  # ...but never more than a minute late
_TRAINER_JOBS = (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER)
_SERVERS_UP_ENV = "DTF_SERVERS_UP"  # set by `dtf run` (dtf/cli/run.py): the servers are up


def _validate_input_fn(input_fn):
    if not callable(input_fn):
        raise TypeError(f"`input_fn` must be callable, given: {input_fn}")


def _validate_hooks(hooks):
    return validate_hooks(hooks, "All hooks must be `SessionRunHook` instances, given: {}")


class TrainSpec(collections.namedtuple("TrainSpec", ["input_fn", "max_steps", "hooks"])):
    """What train_and_evaluate trains on, and up to which global step."""

    def __new__(cls, input_fn, max_steps=None, hooks=None):
        _validate_input_fn(input_fn)
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        return super().__new__(cls, input_fn=input_fn, max_steps=max_steps,
                               hooks=_validate_hooks(hooks))


class EvalSpec(collections.namedtuple("EvalSpec", [
        "input_fn", "steps", "name", "hooks", "exporters", "start_delay_secs", "throttle_secs"])):
    """What train_and_evaluate evaluates on, for how many batches, and how often."""

    def __new__(cls, input_fn, steps=100, name=None, hooks=None, exporters=None,
                start_delay_secs=120, throttle_secs=600):
        _validate_input_fn(input_fn)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be string, given: {name}")
        exporters = _validate_exporters(exporters)
        if start_delay_secs < 0:
            raise ValueError(f"Must specify start_delay_secs >= 0, given: {start_delay_secs}")
        if throttle_secs < 0:
            raise ValueError(f"Must specify throttle_secs >= 0, given: {throttle_secs}")
        return super().__new__(cls, input_fn=input_fn, steps=steps, name=name,
                               hooks=_validate_hooks(hooks), exporters=exporters,
                               start_delay_secs=start_delay_secs, throttle_secs=throttle_secs)


def _validate_exporters(exporters):
    from dtf.estimator.exporter import Exporter

    if exporters is None:
        return ()
    if not isinstance(exporters, (list, tuple)):
        exporters = [exporters]
    names = []
    for exporter in exporters:
        if not isinstance(exporter, Exporter):
            raise TypeError(f"`exporters` must be an Exporter, given {exporter}")
        if not exporter.name:
            raise ValueError(f"An Exporter cannot have a name that is `None` or empty. All "
                             f"exporter names: {[e.name for e in exporters]}")
        if exporter.name in names:
            raise ValueError(f"`exporters` must have unique names. Such a name cannot be "
                             f"`None`. {[e.name for e in exporters]} given.")
        names.append(exporter.name)
    return tuple(exporters)


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains and evaluates as this task's TF_CONFIG role says. Locally returns
    (eval metrics of the last evaluation, export results []); on a cluster returns None."""
    from dtf.estimator.estimator import Estimator

    if not isinstance(eval_spec, EvalSpec):
        raise TypeError(f"`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
                        f"{type(eval_spec)}")
    if not isinstance(estimator, Estimator):
        raise TypeError(f"`estimator` must have type `tf.estimator.Estimator`. Got: "
                        f"{type(estimator)}")
    if not isinstance(train_spec, TrainSpec):
        raise TypeError(f"`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
                        f"{type(train_spec)}")
    config = estimator.config
    if config.task_type == TaskType.EVALUATOR and config.task_id > 0:
        raise ValueError("For distributed training, there can only be one `evaluator` task "
                         f"(with task id 0).  Given task id {config.task_id}")
    return _TrainingExecutor(estimator, train_spec, eval_spec).run()


class _Evaluator:
    """Evaluates the latest checkpoint, once per new checkpoint, then runs the exporters
    (their results in ``export_results``)."""

    def __init__(self, estimator, eval_spec, max_training_steps=None):
        self._estimator = estimator
        self._eval_spec = eval_spec
        self._max_training_steps = max_training_steps
        self._previous_ckpt_path = None
        self.export_results = []

    def evaluate(self):
        """The metrics of the latest checkpoint, or None if there is no new one."""
        latest = self._estimator.latest_checkpoint()
        if not latest:
            log.info("Estimator is not trained yet. Will start an evaluation when a checkpoint "
                     "is ready.")
            return None
        if latest == self._previous_ckpt_path:
            log.info("No new checkpoint ready for evaluation. Skip the current evaluation pass as "
                     "evaluation results are expected to be same for the same checkpoint.")
            return None
        try:
            metrics = self._estimator.evaluate(
                input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
                name=self._eval_spec.name, checkpoint_path=latest, hooks=self._eval_spec.hooks)
        except errors.NotFoundError:
            if checkpoint_exists(latest):
                raise
            # The chief deleted it meanwhile (it keeps keep_checkpoint_max of them): a newer
            # one is there for the next pass, where TF's evaluator would stop with the error.
            log.warning("Checkpoint %s was deleted before it could be evaluated; evaluating "
                        "the latest one in the next pass.", latest)
            return None
        final = bool(self._max_training_steps) and \
            metrics["global_step"] >= self._max_training_steps
        self.export_results = self._export(metrics, latest, final)
        self._previous_ckpt_path = latest
        return metrics

    def _export(self, metrics, checkpoint_path, is_the_final_export):
        base = os.path.join(self._estimator.model_dir, "export")
        return [exporter.export(estimator=self._estimator,
                                export_path=os.path.join(base, exporter.name),
                                checkpoint_path=checkpoint_path, eval_result=metrics,
                                is_the_final_export=is_the_final_export)
                for exporter in self._eval_spec.exporters]


class _NewCheckpointListenerForEvaluate(CheckpointSaverListener):
    """Local mode: evaluates after a checkpoint save, at most once per throttle_secs, and
    always after the last one."""

    def __init__(self, evaluator, throttle_secs):
        self._evaluator = evaluator
        self._throttle_secs = throttle_secs
        self.eval_result = None

    def begin(self):
        self._timer = SecondOrStepTimer(every_secs=self._throttle_secs)
        self._is_first_run = True

    def after_save(self, session, global_step_value):
        if self._is_first_run:  # the first save is of the untrained model
            self._is_first_run = False
            return
        if self._timer.should_trigger_for_step(global_step_value):
            self._evaluate(global_step_value)
        else:
            log.info("Skip the current checkpoint eval due to throttle secs (%s secs).",
                     self._throttle_secs)

    def end(self, session, global_step_value):
        if global_step_value != self._timer.last_triggered_step():
            self._evaluate(global_step_value)

    def _evaluate(self, global_step_value):
        self._timer.update_last_triggered_step(global_step_value)
        self.eval_result = self._evaluator.evaluate()
        if self.eval_result is None:
            raise RuntimeError("There was no new checkpoint after the training.")


class _TrainingExecutor:
    def __init__(self, estimator, train_spec, eval_spec):
        self._estimator = estimator
        self._train_spec = train_spec
        self._eval_spec = eval_spec

    def run(self):
        config = self._estimator.config
        if not config.cluster_spec and config.task_type != TaskType.EVALUATOR:
            log.info("Running training and evaluation locally (non-distributed).")
            return self.run_local()
        if not config.task_type:
            raise ValueError("`estimator.config` must have task_type set. This usually means "
                             "TF_CONFIG environment is not set correctly.")
        if config.task_type == "local":
            raise ValueError("`task.type` in TF_CONFIG cannot be `local`. Leaving `cluster` and "
                             "`task` properties in TF_CONFIG absent triggers train and evaluate "
                             "`Estimator` locally (non-distributed).")
        runners = {TaskType.CHIEF: self._start_distributed_training,
                   TaskType.WORKER: self._start_distributed_training,
                   TaskType.PS: self.run_ps, TaskType.EVALUATOR: self.run_evaluator}
        if config.task_type == TaskType.MASTER:
            raise NotImplementedError("train_and_evaluate: the `master` task type (train and "
                                      "evaluate on one task) is not supported by dtf; use "
                                      "`chief` and an `evaluator` task")
        if config.task_type not in runners:
            raise ValueError(f"Task type {config.task_type} is not supported. Supported task "
                             f"types are {sorted(runners)}")
        runners[config.task_type]()
        return None

    def run_local(self):
        config = self._estimator.config
        log.info("Start train and evaluate loop. The evaluate will happen after every "
                 "checkpoint. Checkpoint frequency is determined based on RunConfig arguments: "
                 "save_checkpoints_steps %s or save_checkpoints_secs %s.",
                 config.save_checkpoints_steps, config.save_checkpoints_secs)
        evaluator = _Evaluator(self._estimator, self._eval_spec, self._train_spec.max_steps)
        listener = _NewCheckpointListenerForEvaluate(evaluator, self._eval_spec.throttle_secs)
        self._estimator.train(input_fn=self._train_spec.input_fn,
                              max_steps=self._train_spec.max_steps,
                              hooks=list(self._train_spec.hooks), saving_listeners=[listener])
        return listener.eval_result, evaluator.export_results

    def _start_std_server(self, config):
        from dtf.client.config import ConfigProto
        from dtf.train.server import Server

        if os.environ.get(_SERVERS_UP_ENV) == "1":
            # Under `dtf run` the cluster's servers are up already (`dtf up`): this task's
            # session talks to its own, which holds the port TF would bind here.
            log.info("Using the running server of %s:%s (%s is set).", config.task_type,
                     config.task_id, _SERVERS_UP_ENV)
            return None
        if not config.cluster_spec or not config.task_type or config.task_id is None:
            raise RuntimeError("Could not start server; be sure to specify cluster_spec, "
                               "task_type, and task in RunConfig or set the TF_CONFIG "
                               "environment variable.")
        if not config.master:
            jobs = config.cluster_spec.jobs
            if (len(jobs) == 1 and len(config.cluster_spec.job_tasks(jobs[0])) == 1
                    and config.task_type in _TRAINER_JOBS):
                log.info("Skip starting Tensorflow server as there is only one node in the "
                         "cluster.")
                return None
            raise RuntimeError("Could not start server; be sure to specify master in RunConfig "
                               "or set the TF_CONFIG environment variable.")
        log.info("Start Tensorflow server.")
        server = Server(config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
                        config=ConfigProto(log_device_placement=False), start=False)
        server.start()
        return server

    def _start_distributed_training(self):
        config = self._estimator.config
        self._server = self._start_std_server(config)  # before any sleep: the others wait on it
        delay = 0
        if config.task_type == TaskType.WORKER:
            max_delay = _MAX_DELAY_SECS
            if config.experimental_max_worker_delay_secs is not None:
                max_delay = int(config.experimental_max_worker_delay_secs)
            delay = min(max_delay, (config.task_id + 1) * _DELAY_SECS_PER_WORKER)
        if delay > 0:
            log.info("Waiting %d secs before starting training.", delay)
            time.sleep(delay)
        self._estimator.train(input_fn=self._train_spec.input_fn,
                              max_steps=self._train_spec.max_steps,
                              hooks=list(self._train_spec.hooks))

    def run_ps(self):
        server = self._start_std_server(self._estimator.config)
        if server is None:   # the cluster's own ps server serves (DTF_SERVERS_UP)
            return
        server.join()

    def run_evaluator(self):
        if self._eval_spec.start_delay_secs:
            log.info("Waiting %f secs before starting eval.", self._eval_spec.start_delay_secs)
            time.sleep(self._eval_spec.start_delay_secs)
        max_steps = self._train_spec.max_steps
        evaluator = _Evaluator(self._estimator, self._eval_spec, max_steps)
        metrics = None
        while True:
            if metrics is not None and max_steps and metrics["global_step"] >= max_steps:
                log.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                         metrics["global_step"], max_steps)
                return
            start = time.time()
            metrics = evaluator.evaluate()
            remaining = self._eval_spec.throttle_secs - (time.time() - start)
            if remaining > 0:
                log.info("Waiting %f secs before starting next eval run.", remaining)
                time.sleep(remaining)
