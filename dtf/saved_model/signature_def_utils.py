"""tf.saved_model.signature_def_utils: building SignatureDefs."""
from __future__ import annotations

from . import signature_constants as sc
from .proto import SignatureDef
from .utils import build_tensor_info

__all__ = ["build_signature_def", "classification_signature_def", "is_valid_signature", "predict_signature_def", "regression_signature_def"]


def build_signature_def(inputs=None, outputs=None, method_name=None):
    """A SignatureDef of ``inputs`` and ``outputs`` (dicts of TensorInfo) and ``method_name``."""
    sig = SignatureDef()
    for k, v in (inputs or {}).items():
        sig.inputs[k] = v
    for k, v in (outputs or {}).items():
        sig.outputs[k] = v
    if method_name is not None:
        sig.method_name = method_name
    return sig


def predict_signature_def(inputs, outputs):
    """A Predict SignatureDef: ``inputs`` and ``outputs`` dicts of tensors."""
    if inputs is None or not inputs:
        raise ValueError("Prediction inputs cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction outputs cannot be None or empty.")
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()},
                               {k: build_tensor_info(t) for k, t in outputs.items()},
                               sc.PREDICT_METHOD_NAME)


def regression_signature_def(examples, predictions):
    """A Regress SignatureDef: serialized tf.Examples in, one float tensor out."""
    if examples is None or predictions is None:
        raise ValueError("Regression examples and predictions cannot be None.")
    return build_signature_def({sc.REGRESS_INPUTS: build_tensor_info(examples)},
                               {sc.REGRESS_OUTPUTS: build_tensor_info(predictions)},
                               sc.REGRESS_METHOD_NAME)


def classification_signature_def(examples, classes, scores):
    """A Classify SignatureDef: serialized tf.Examples in, classes and/or scores out."""
    if examples is None:
        raise ValueError("Classification examples cannot be None.")
    if classes is None and scores is None:
        raise ValueError("Classification classes and scores cannot both be None.")
    outputs = {}
    if classes is not None:
        outputs[sc.CLASSIFY_OUTPUT_CLASSES] = build_tensor_info(classes)
    if scores is not None:
        outputs[sc.CLASSIFY_OUTPUT_SCORES] = build_tensor_info(scores)
    return build_signature_def({sc.CLASSIFY_INPUTS: build_tensor_info(examples)}, outputs,
                               sc.CLASSIFY_METHOD_NAME)


def is_valid_signature(signature_def):
    """Whether ``signature_def`` is a well-formed predict, classify or regress signature."""
    if signature_def is None or not signature_def.method_name:
        return False
    if not signature_def.inputs or not signature_def.outputs:
        return False
    return signature_def.method_name in (sc.PREDICT_METHOD_NAME, sc.CLASSIFY_METHOD_NAME,
                                         sc.REGRESS_METHOD_NAME)
