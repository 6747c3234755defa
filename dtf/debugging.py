"""tf.debugging: TF 1.15's checks (assert_*, check_numerics, Assert) and predicates."""
from dtf.ops.check_ops import *  # noqa: F401,F403
from dtf.ops.check_ops import assert_shapes  # noqa: F401 - tf.debugging only, as in TF 1.15
from dtf.ops.check_ops import verify_tensor_all_finite as assert_all_finite  # noqa: F401
from dtf.ops.logging_ops import Assert, check_numerics  # noqa: F401
from dtf.ops.math_ops import is_finite, is_inf, is_nan  # noqa: F401
