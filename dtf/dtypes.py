"""tf.dtypes: the DType values dtf has, as_dtype (which every constructor's dtype goes
through: "float" is float32, Python's float too), cast and saturate_cast."""
from dtf.framework.dtypes import (  # noqa: F401
    DType, as_dtype, bool, double, float16, float32, float64, half, int8, int16, int32, int64,
    string, uint8, uint16,
)
from dtf.ops.math_ops import cast, saturate_cast  # noqa: F401
