"""tf.saved_model (TF 1.15's v1 API): SavedModelBuilder, loader.load, simple_save, the tag
and signature constants, and the signature and TensorInfo helpers."""
from . import builder, loader, signature_constants, signature_def_utils, tag_constants  # noqa
from . import utils  # noqa: F401
from .builder import SavedModelBuilder as Builder  # noqa: F401
from .builder import simple_save  # noqa: F401
from .loader import load, maybe_saved_model_directory as contains_saved_model  # noqa: F401
from .signature_constants import (  # noqa: F401
    CLASSIFY_INPUTS, CLASSIFY_METHOD_NAME, CLASSIFY_OUTPUT_CLASSES, CLASSIFY_OUTPUT_SCORES,
    DEFAULT_SERVING_SIGNATURE_DEF_KEY, PREDICT_INPUTS, PREDICT_METHOD_NAME, PREDICT_OUTPUTS,
    REGRESS_INPUTS, REGRESS_METHOD_NAME, REGRESS_OUTPUTS,
)
from .signature_def_utils import (  # noqa: F401
    build_signature_def, classification_signature_def, is_valid_signature,
    predict_signature_def, regression_signature_def,
)
from .tag_constants import GPU, SERVING, TPU, TRAINING  # noqa: F401
from .utils import build_tensor_info, get_tensor_from_tensor_info  # noqa: F401
from .loader import maybe_saved_model_directory  # noqa: F401,E402
