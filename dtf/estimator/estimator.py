"""tf.estimator.Estimator: a model_fn plus a model_dir. Each of train, evaluate and predict
builds a fresh graph from input_fn and model_fn, runs it in a MonitoredSession and keeps
its state in model_dir's checkpoints (TF 1.15's Estimator, between-graph on a cluster)."""
from __future__ import annotations

import copy
import inspect
import logging
import os
import tempfile

from dtf.estimator import run_config as _run_config
from dtf.estimator import warm_starting
from dtf.estimator.model_fn import EstimatorSpec, ModeKeys, validate_hooks
from dtf.framework import ops as _ops
from dtf.train.session_run_hook import SessionRunHook

__all__ = ["Estimator"]

log = logging.getLogger("dtf")

_VALID_MODEL_FN_ARGS = {"features", "labels", "mode", "params", "self", "config"}


def fn_args(fn):
    """The names of fn's parameters, as TF's function_utils.fn_args (functools.partial
    keywords bound already count as absent)."""
    import functools

    if isinstance(fn, functools.partial):
        return tuple(a for a in fn_args(fn.func)[len(fn.args):] if a not in (fn.keywords or {}))
    params = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in params
                 if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD))


def _verify_model_fn_args(model_fn, params):
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params "
                         f"({params}) is passed to Estimator.")
    if params is None and "params" in args:
        log.warning("Estimator's model_fn (%s) includes params argument, but params are not "
                    "passed to Estimator.", model_fn)
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


def _check_hooks_type(hooks):
    return list(validate_hooks(hooks, "Hooks must be a SessionRunHook, given: {}"))


def _check_listeners_type(saving_listeners):
    from dtf.train.basic_session_run_hooks import CheckpointSaverListener

    saving_listeners = list(saving_listeners or [])
    for listener in saving_listeners:
        if not isinstance(listener, CheckpointSaverListener):
            raise TypeError("saving_listeners must be a list of CheckpointSaverListener, given: "
                            f"{listener}")
    return saving_listeners


def _load_global_step_from_checkpoint_dir(checkpoint_dir):
    from dtf.train.saver import NewCheckpointReader, latest_checkpoint

    try:
        return NewCheckpointReader(latest_checkpoint(checkpoint_dir)).get_tensor("global_step")
    except Exception:  # noqa: BLE001 - TF: no readable checkpoint means step 0
        return 0


class _DatasetInitializerHook(SessionRunHook):
    """Initializes the iterator of an input_fn's Dataset once the session exists."""

    def __init__(self, iterator):
        self._iterator = iterator

    def begin(self):
        self._initializer = self._iterator.initializer

    def after_create_session(self, session, coord):
        session.run(self._initializer)


def parse_input_fn_result(result):
    """(features, labels, input_hooks) from what an input_fn returned: a Dataset of
    (features, labels) or of features, a (features, labels) pair, or features alone."""
    from dtf.data.dataset_ops import Dataset
    from dtf.data.iterator_ops import make_initializable_iterator

    hooks = []
    if isinstance(result, Dataset):
        iterator = make_initializable_iterator(result)
        hooks.append(_DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


class Estimator:
    """Trains, evaluates and predicts with a model_fn, keeping the model in model_dir."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        if config is None:
            config = _run_config.RunConfig()
        elif not isinstance(config, _run_config.RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided {config}.")
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
        if model_dir and config.model_dir and model_dir != config.model_dir:
            raise ValueError(
                "`model_dir` are set both in constructor and `RunConfig`, but with different "
                f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' ")
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            log.warning("Using temporary folder as model directory: %s", model_dir)
        if config.model_dir != model_dir:
            config = config.replace(model_dir=model_dir)
        log.info("Using config: %s", config)
        self._config = config
        self._model_dir = model_dir
        self._session_config = config.session_config
        if self._session_config is None:
            from dtf.client.config import ConfigProto

            self._session_config = ConfigProto(allow_soft_placement=True)
        self._device_fn = config.device_fn or _replica_device_setter(config)
        if model_fn is None:
            raise ValueError("model_fn must be provided to Estimator.")
        _verify_model_fn_args(model_fn, params)
        self._model_fn = model_fn
        self._params = copy.deepcopy(params or {})
        self._warm_start_settings = warm_starting.settings_from(warm_start_from)

    @property
    def model_dir(self):
        return self._model_dir

    @property
    def config(self):
        return copy.deepcopy(self._config)

    @property
    def params(self):
        return copy.deepcopy(self._params)

    @property
    def model_fn(self):
        """model_fn with the estimator's params and config bound (features, labels, mode)."""
        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)
        return public_model_fn

    # ---- checkpoint inspection ----
    def latest_checkpoint(self):
        """The path of model_dir's latest checkpoint, or None."""
        from dtf.train.saver import latest_checkpoint

        return latest_checkpoint(self.model_dir)

    def _check_checkpoint_available(self):
        if not self.latest_checkpoint():
            raise ValueError(f"Could not find trained model in model_dir: {self.model_dir}.")

    def get_variable_names(self):
        """The names of the variables in model_dir's latest checkpoint."""
        from dtf.train.saver import list_variables

        self._check_checkpoint_available()
        return [name for name, _ in list_variables(self.model_dir)]

    def get_variable_value(self, name):
        """The value of variable `name` in model_dir's latest checkpoint (a numpy array)."""
        from dtf.train.saver import load_variable

        self._check_checkpoint_available()
        return load_variable(self.model_dir, name)

    def eval_dir(self, name=None):
        """Where evaluate() writes its summaries: model_dir/eval or model_dir/eval_<name>."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    # ---- graph building ----
    def _call_input_fn(self, input_fn, mode):
        args = fn_args(input_fn)
        kwargs = {}
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = self.config
        with _ops.device("/cpu:0"):
            return input_fn(**kwargs)

    def _call_model_fn(self, features, labels, mode, config):
        args = fn_args(self._model_fn)
        kwargs = {}
        if "labels" in args:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("model_fn does not take labels, but input_fn returns labels.")
        if "mode" in args:
            kwargs["mode"] = mode
        if "params" in args:
            kwargs["params"] = self.params
        if "config" in args:
            kwargs["config"] = config
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError("model_fn should return an EstimatorSpec.")
        return spec

    def _new_graph_with_global_step(self, graph):
        from dtf.ops.random_ops import set_random_seed
        from dtf.train.training_util import create_global_step, get_global_step

        set_random_seed(self._config.tf_random_seed)
        step = create_global_step(graph)
        assert step is get_global_step(graph) and step.dtype.is_integer
        return step

    def _checkpoint_to_read(self, checkpoint_path, purpose):
        """The given checkpoint, else model_dir's latest, else None (fresh variables)."""
        checkpoint_path = checkpoint_path or self.latest_checkpoint()
        if not checkpoint_path:
            log.info("Could not find trained model in model_dir: %s, running initialization to "
                     "%s.", self._model_dir, purpose)
        return checkpoint_path

    def _maybe_warm_start(self, checkpoint_path):
        """evaluate/predict without any checkpoint start from the warm-start one (TF)."""
        if not checkpoint_path and self._warm_start_settings:
            warm_starting.warm_start(self._warm_start_settings)

    # ---- train ----
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for `steps` more steps, or up to global step `max_steps`, or until input_fn's
        data runs out; checkpoints go to model_dir. Returns self."""
        from dtf.train.basic_session_run_hooks import StopAtStepHook

        if self._config.task_type in (_run_config.TaskType.EVALUATOR, _run_config.TaskType.PS):
            raise ValueError(
                "Train has been called wrong configuration. Please use "
                "tf.estimator.train_and_evaluate which calls proper API according to given "
                f"configuration. Current configuration: {self._config}.")
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None and max_steps <= _load_global_step_from_checkpoint_dir(
                self._model_dir):
            log.info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks_type(hooks)
        if steps is not None or max_steps is not None:
            hooks.append(StopAtStepHook(steps, max_steps))
        loss = self._train_model(input_fn, hooks, _check_listeners_type(saving_listeners))
        log.info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, saving_listeners):
        from dtf.estimator import training_loop

        with _ops.Graph().as_default() as g, g.device(self._device_fn):
            global_step = self._new_graph_with_global_step(g)
            features, labels, input_hooks = parse_input_fn_result(
                self._call_input_fn(input_fn, ModeKeys.TRAIN))
            spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self.config)
            if self._warm_start_settings and not self.latest_checkpoint():
                warm_starting.warm_start(self._warm_start_settings)
            return training_loop.train_with_spec(self, spec, input_hooks + hooks, global_step,
                                                 saving_listeners)

    # ---- evaluate ----
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates the model of checkpoint_path (default: the latest in model_dir) on
        input_fn's data, for `steps` batches or until the data runs out. Returns a dict of
        the eval_metric_ops' values plus 'loss' (the mean loss) and 'global_step'."""
        from dtf.estimator import training_loop

        hooks = _check_hooks_type(hooks)
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        checkpoint_path = self._checkpoint_to_read(checkpoint_path, "evaluate")
        with _ops.Graph().as_default() as g:
            self._new_graph_with_global_step(g)
            features, labels, input_hooks = parse_input_fn_result(
                self._call_input_fn(input_fn, ModeKeys.EVAL))
            spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self.config)
            self._maybe_warm_start(checkpoint_path)
            return training_loop.evaluate_with_spec(
                self, spec, input_hooks + hooks, steps, checkpoint_path, self.eval_dir(name))

    # ---- predict ----
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions for input_fn's features (one example at a time unless
        yield_single_examples is False), using checkpoint_path or model_dir's latest."""
        from dtf.train.monitored_session import ChiefSessionCreator, MonitoredSession

        hooks = _check_hooks_type(hooks)
        checkpoint_path = self._checkpoint_to_read(checkpoint_path, "predict")
        with _ops.Graph().as_default() as g:
            self._new_graph_with_global_step(g)
            features, _, input_hooks = parse_input_fn_result(
                self._call_input_fn(input_fn, ModeKeys.PREDICT))
            if not _has_dataset_or_queue_runner(g):
                log.warning("Input graph does not use tf.data.Dataset or contain a QueueRunner. "
                            "That means predict yields forever. This is probably a mistake.")
            spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self.config)
            self._maybe_warm_start(checkpoint_path)
            predictions = _extract_keys(spec.predictions, predict_keys)
            creator = ChiefSessionCreator(checkpoint_filename_with_path=checkpoint_path,
                                          master=self._config.master, scaffold=spec.scaffold,
                                          config=self._session_config)
            all_hooks = input_hooks + hooks + list(spec.prediction_hooks)
            with MonitoredSession(session_creator=creator, hooks=all_hooks) as sess:
                while not sess.should_stop():
                    values = sess.run(predictions)
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(predictions, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}


    # ---- export ----
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                           as_text=False, checkpoint_path=None, experimental_mode="infer"):
        """Writes the PREDICT graph on ``serving_input_receiver_fn``'s features and the
        latest checkpoint as a SavedModel in ``export_dir_base/<timestamp>``; returns that
        directory (bytes, as TF)."""
        from dtf.estimator.export import export_saved_model
        if experimental_mode != ModeKeys.PREDICT:
            raise ValueError("export_saved_model: dtf exports the PREDICT mode only")
        return export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                                  assets_extra, as_text, checkpoint_path)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn, assets_extra=None,
                          as_text=False, checkpoint_path=None, strip_default_attrs=False):
        """TF 1.x's name of export_saved_model."""
        if strip_default_attrs:
            raise ValueError("export_savedmodel: strip_default_attrs is not supported by dtf")
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn,
                                       assets_extra, as_text, checkpoint_path)


def _has_dataset_or_queue_runner(graph):
    """Whether the input can run out (else predict yields forever, as in TF)."""
    return bool(graph.get_collection(_ops.GraphKeys.QUEUE_RUNNERS)) or any(
        op.type == "IteratorGetNext" for op in graph.get_operations())


def _extract_keys(predictions, predict_keys):
    if predict_keys is None:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict predictions.")
    chosen = {k: v for k, v in predictions.items() if k in predict_keys}
    if not chosen:
        raise ValueError(f"Expected to run at least one output from {list(predictions)}, "
                         f"provided {predict_keys}.")
    return chosen


def _batch_length(values):
    length = None
    for key, value in values.items():
        length = length or value.shape[0]
        if value.shape[0] != length:
            raise ValueError(f"Batch length of predictions should be same. {key} has different "
                             "batch length than others.")
    return length


def _replica_device_setter(config):
    """TF's default device function: variables on the ps tasks when the cluster has any."""
    if config.num_ps_replicas <= 0:
        return None
    from dtf.train.device_setter import replica_device_setter

    worker_device = (f"/job:{config.task_type}/task:{config.task_id}" if config.task_type
                     else "/job:worker")
    return replica_device_setter(ps_tasks=config.num_ps_replicas, worker_device=worker_device,
                                 merge_devices=True, cluster=config.cluster_spec)
