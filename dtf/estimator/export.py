"""tf.estimator.export: serving input receivers and Estimator.export_saved_model.

The export graph is the model_fn's PREDICT graph on the receiver's features; the latest
checkpoint's variables go to a SavedModel (tagged 'serve') under
``export_dir_base/<timestamp>``, first written to a temporary directory and then renamed,
as TF does. Each of the model's export outputs becomes a signature (a Predict signature of
the predictions when the model names none); one that does not fit the receiver (Classify
and Regress take one string tensor of serialized tf.Examples) is left out and logged."""
from __future__ import annotations

import collections
import logging
import os
import time

from dtf.estimator.export_output import (  # noqa: F401 - tf.estimator.export's names
    ClassificationOutput, ExportOutput, PredictOutput, RegressionOutput, get_export_outputs)
from dtf.framework import ops as _ops

log = logging.getLogger("dtf")

__all__ = ["ServingInputReceiver", "build_raw_serving_input_receiver_fn", "build_parsing_serving_input_receiver_fn", "ExportOutput", "PredictOutput", "ClassificationOutput", "RegressionOutput"]


class ServingInputReceiver(collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors",
                                 "receiver_tensors_alternatives"])):
    """The features a model_fn gets at serving time and the tensors a request feeds."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        from dtf.ops.sparse_ops import SparseTensor
        if features is None:
            raise ValueError("features must be defined.")
        if not isinstance(features, dict):
            features = {"feature": features}
        for k, v in features.items():
            if not isinstance(k, str):
                raise ValueError(f"feature keys must be strings: {k}.")
            if not isinstance(v, (_ops.Tensor, SparseTensor)):
                raise ValueError(f"feature {k} must be a Tensor or SparseTensor.")
        if receiver_tensors is None:
            raise ValueError("receiver_tensors must be defined.")
        if not isinstance(receiver_tensors, dict):
            receiver_tensors = {"input": receiver_tensors}
        if receiver_tensors_alternatives:
            raise ValueError("ServingInputReceiver: receiver_tensors_alternatives is not "
                             "supported by dtf")
        return super().__new__(cls, features, receiver_tensors, None)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A serving_input_receiver_fn with one placeholder per feature (shaped like
    ``features``' tensors, batch dimension ``default_batch_size``), fed directly."""
    def fn():
        from dtf.ops.array_ops import placeholder
        receivers = {}
        for name, t in features.items():
            shape = [default_batch_size] + t.get_shape().as_list()[1:]
            receivers[name] = placeholder(t.dtype, shape=shape, name=name)
        return ServingInputReceiver(dict(receivers), receivers)
    return fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A serving_input_receiver_fn taking serialized tf.Examples ('examples'), parsed with
    ``feature_spec``."""
    def fn():
        from dtf.framework import dtypes
        from dtf.io.parsing_ops import parse_example
        from dtf.ops.array_ops import placeholder
        examples = placeholder(dtypes.string, shape=[default_batch_size],
                               name="input_example_tensor")
        return ServingInputReceiver(parse_example(examples, feature_spec),
                                    {"examples": examples})
    return fn


def export_saved_model(estimator, export_dir_base, serving_input_receiver_fn,
                       assets_extra=None, as_text=False, checkpoint_path=None):
    from dtf.estimator.model_fn import ModeKeys
    from dtf.saved_model import builder as _builder
    from dtf.saved_model import tag_constants
    from dtf.client.session import Session
    from dtf.train.saver import Saver

    if serving_input_receiver_fn is None:
        raise ValueError("An input_receiver_fn must be defined.")
    if assets_extra:
        raise ValueError("export_saved_model: assets_extra is not supported by dtf")
    checkpoint_path = checkpoint_path or estimator.latest_checkpoint()
    if not checkpoint_path:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}.")
    base = os.fspath(export_dir_base.decode() if isinstance(export_dir_base, bytes)
                     else export_dir_base)
    # A timestamp newer than every export there: TF sleeps until the clock gives a new
    # second; taking the next free number instead keeps exports ordered (LatestExporter
    # keeps the highest) without the wait.
    taken = [int(d) for d in os.listdir(base) if d.isdigit()] if os.path.isdir(base) else []
    stamp = max([int(time.time())] + [t + 1 for t in taken])
    final = os.path.join(base, str(stamp))
    temp = os.path.join(base, f"temp-{stamp}")
    with _ops.Graph().as_default() as g:
        estimator._new_graph_with_global_step(g)
        receiver = serving_input_receiver_fn()
        if not isinstance(receiver, ServingInputReceiver):
            raise ValueError("serving_input_receiver_fn must return a ServingInputReceiver")
        spec = estimator._call_model_fn(receiver.features, None, ModeKeys.PREDICT,
                                        estimator.config)
        sig = build_all_signature_defs(receiver.receiver_tensors,
                                       get_export_outputs(spec.export_outputs, spec.predictions))
        with Session(graph=g) as sess:
            Saver(sharded=False, allow_empty=True).restore(sess, checkpoint_path)
            b = _builder.SavedModelBuilder(temp)
            b.add_meta_graph_and_variables(sess, [tag_constants.SERVING],
                                           signature_def_map=sig, clear_devices=True)
            b.save(as_text)
    os.rename(temp, final)
    return final.encode()


def build_all_signature_defs(receiver_tensors, export_outputs):
    """One SignatureDef per export output that fits the receiver tensors (TF's rule: the
    others are left out and logged); ValueError when none fits."""
    from dtf.saved_model.signature_def_utils import is_valid_signature

    sigs, excluded = {}, {}
    for key, output in export_outputs.items():
        try:
            sigs[str(key)] = output.as_signature_def(receiver_tensors)
        except ValueError as e:
            excluded[str(key)] = str(e)
    for key, why in sorted(excluded.items()):
        log.warning("Signature %s excluded from the export: %s", key, why)
    sigs = {k: v for k, v in sigs.items() if is_valid_signature(v)}
    if not sigs:
        raise ValueError(f"Export failed: no signature fits the serving input; excluded: "
                         f"{excluded}")
    if "serving_default" not in sigs:
        log.warning("Export includes no default signature!")
    return sigs
