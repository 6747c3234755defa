"""tf.estimator.ModeKeys and EstimatorSpec: what a model_fn returns, validated as TF 1.15 does."""
from __future__ import annotations

import collections

from dtf.framework import ops as _ops
from dtf.ops.variables import Variable

__all__ = ["ModeKeys", "EstimatorSpec"]

LOSS_METRIC_KEY = "loss"  # the metric evaluate() adds itself; a model_fn may not define it


class ModeKeys:
    """The three modes a model_fn is called in."""
    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


def _graph_error(what, name):
    return ValueError(
        f"{what} with \"{name}\" must be from the default graph. Possible causes of this error "
        f"include: \n\n1) {what} was created outside the context of the default graph.\n\n2) The "
        "object passed through to EstimatorSpec was not created in the most recent call to "
        "\"model_fn\".")


def _check_in_default_graph(x, what):
    if x.graph is not _ops.get_default_graph():
        raise _graph_error(what, x.name)


def _check_is_tensor(x, name):
    if not isinstance(x, _ops.Tensor):
        raise TypeError(f"{name} must be Tensor, given: {x}")
    return x


def _validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if isinstance(train_op, Variable):
        train_op = train_op.op
    if not isinstance(train_op, (_ops.Operation, _ops.Tensor)):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    _check_in_default_graph(train_op, "train_op")
    return train_op


def _validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    loss = _check_is_tensor(loss, "loss")
    shape = loss.get_shape()
    if shape.num_elements() not in (None, 1):
        raise ValueError(f"Loss must be scalar, given: {loss}")
    if shape.ndims != 0:
        from dtf.ops import array_ops

        loss = array_ops.reshape(loss, [])
    _check_in_default_graph(loss, "loss")
    return loss


def _validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        predictions = {k: _check_is_tensor(v, f"predictions[{k}]") for k, v in predictions.items()}
        for v in predictions.values():
            _check_in_default_graph(v, "prediction values")
    else:
        _check_in_default_graph(_check_is_tensor(predictions, "predictions"), "prediction values")
    return predictions


def validate_hooks(hooks, message="All hooks must be SessionRunHook instances, given: {}"):
    """hooks as a tuple; a TypeError (TF's message for the caller) for a non-hook."""
    from dtf.train.session_run_hook import SessionRunHook

    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(message.format(hook))
    return hooks


def _validate_eval_metric_ops(eval_metric_ops):
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError("Values of eval_metric_ops must be (metric_value, update_op) tuples, "
                            f"given: {value} for key: {key}")
        for x in value:
            if isinstance(x, (_ops.Tensor, _ops.Operation)):
                _check_in_default_graph(x, "eval_metric_ops")
    return dict(eval_metric_ops)


def _validate_scaffold(scaffold):
    from dtf.train.monitored_session import Scaffold

    scaffold = scaffold or Scaffold()
    if not isinstance(scaffold, Scaffold):
        raise TypeError(f"scaffold must be tf.train.Scaffold. Given: {scaffold}")
    return scaffold


_FIELDS = ("mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
           "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
           "prediction_hooks")


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """What a model_fn returns: the ops of one mode (loss and train_op to train, loss and
    eval_metric_ops to evaluate, predictions to predict) and the hooks to run with them."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        from dtf.estimator.export_output import validate_export_outputs
        return super().__new__(
            cls, mode=mode, predictions=_validate_predictions(predictions, mode),
            loss=_validate_loss(loss, mode), train_op=_validate_train_op(train_op, mode),
            eval_metric_ops=_validate_eval_metric_ops(eval_metric_ops),
            export_outputs=validate_export_outputs(export_outputs),
            training_chief_hooks=validate_hooks(training_chief_hooks),
            training_hooks=validate_hooks(training_hooks), scaffold=_validate_scaffold(scaffold),
            evaluation_hooks=validate_hooks(evaluation_hooks),
            prediction_hooks=validate_hooks(prediction_hooks))

    def _replace(self, **kwds):
        if "mode" in kwds and self.mode != kwds["mode"]:
            raise ValueError("mode of EstimatorSpec cannot be changed.")
        new_fields = self._asdict()
        new_fields.update(kwds)
        return EstimatorSpec(**new_fields)
