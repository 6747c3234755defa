"""tf.estimator.export's ExportOutput kinds (TF 1.15): what a model_fn offers for serving,
each turned into one SignatureDef of the exported SavedModel."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops


class ExportOutput:
    """The base: an output a SavedModel signature can be built from."""

    def as_signature_def(self, receiver_tensors):
        raise NotImplementedError


def _single_string_input(receiver_tensors, what):
    if len(receiver_tensors) != 1:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    (_, examples), = receiver_tensors.items()
    if examples.dtype != dtypes.string:
        raise ValueError(f"{what} input must be a single string Tensor; got {receiver_tensors}")
    return examples


class ClassificationOutput(ExportOutput):
    """Scores (float32 [batch, classes]) and/or class names (string [batch, classes]) for
    the Classify API, which takes serialized tf.Examples."""

    def __init__(self, scores=None, classes=None):
        if scores is not None and not (isinstance(scores, _ops.Tensor)
                                       and scores.dtype == dtypes.float32):
            raise ValueError(f"Classification scores must be a float32 Tensor; got {scores}")
        if classes is not None and not (isinstance(classes, _ops.Tensor)
                                        and classes.dtype == dtypes.string):
            raise ValueError(f"Classification classes must be a string Tensor; got {classes}")
        if scores is None and classes is None:
            raise ValueError("At least one of scores and classes must be set.")
        self.scores, self.classes = scores, classes

    def as_signature_def(self, receiver_tensors):
        from dtf.saved_model.signature_def_utils import classification_signature_def
        examples = _single_string_input(receiver_tensors, "Classification")
        return classification_signature_def(examples, self.classes, self.scores)


class RegressionOutput(ExportOutput):
    """One float32 value per example for the Regress API (serialized tf.Examples in)."""

    def __init__(self, value):
        if not (isinstance(value, _ops.Tensor) and value.dtype == dtypes.float32):
            raise ValueError(f"Regression output value must be a float32 Tensor; got {value}")
        self.value = value

    def as_signature_def(self, receiver_tensors):
        from dtf.saved_model.signature_def_utils import regression_signature_def
        examples = _single_string_input(receiver_tensors, "Regression")
        return regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
    """Any named tensors for the Predict API, fed by the receiver tensors as they are."""

    def __init__(self, outputs):
        if not isinstance(outputs, dict):
            outputs = {"output": outputs}
        for key, value in outputs.items():
            if not isinstance(key, str):
                raise ValueError(f"Prediction output key must be a string; got {key}.")
            if not isinstance(value, _ops.Tensor):
                raise ValueError(f"Prediction output value must be a Tensor; got {value}.")
        self.outputs = dict(outputs)

    def as_signature_def(self, receiver_tensors):
        from dtf.saved_model.signature_def_utils import predict_signature_def
        return predict_signature_def(receiver_tensors, self.outputs)


def validate_export_outputs(export_outputs):
    """TF's EstimatorSpec check: a dict of ExportOutput objects (or None)."""
    if export_outputs is None:
        return None
    if not isinstance(export_outputs, dict):
        raise TypeError(f"export_outputs must be dict, given: {export_outputs}")
    for v in export_outputs.values():
        if not isinstance(v, ExportOutput):
            raise TypeError(f"Values in export_outputs must be ExportOutput objects. Given: "
                            f"{export_outputs}")
    return dict(export_outputs)


def get_export_outputs(export_outputs, predictions):
    """The outputs to export: a PredictOutput of the predictions when none were given, and
    the one given named serving_default too; several need a serving_default among them."""
    from dtf.saved_model.signature_constants import DEFAULT_SERVING_SIGNATURE_DEF_KEY as DEFAULT
    if export_outputs is None:
        return {DEFAULT: PredictOutput(predictions)}
    export_outputs = dict(export_outputs)
    if len(export_outputs) == 1:
        (key, value), = export_outputs.items()
        export_outputs.setdefault(DEFAULT, value)
    elif DEFAULT not in export_outputs:
        raise ValueError("Multiple export_outputs were provided, but none of them is specified "
                         "as the default.  Do this by naming one of them with "
                         "signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY.")
    return export_outputs
