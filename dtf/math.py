"""tf.math: TF 1.x's math namespace. The same functions as at the top level and in tf.nn
(tf.math.log is tf.log, tf.math.top_k is tf.nn.top_k), plus those TF keeps here:
divide_no_nan, log_sigmoid, l2_normalize, reduce_variance, reduce_std and
reduce_euclidean_norm."""
from dtf.ops.math_ops import (  # noqa: F401
    abs, acos, add, add_n, asin, atan, atan2, ceil, cos, cosh, cumprod, cumsum, divide, equal,
    erf, exp, expm1, floor, floordiv, floormod, greater, greater_equal, is_finite, is_inf,
    is_nan, less, less_equal, log, log1p, logical_and, logical_not, logical_or, logical_xor,
    maximum, minimum, mod, multiply, negative, not_equal, pow, reciprocal, round, rsqrt,
    scalar_mul, sigmoid, sign, sin, sinh, sqrt, square, squared_difference, subtract, tan,
    tanh, truediv,
)
from dtf.ops.math_ops import div_no_nan as divide_no_nan  # noqa: F401
from dtf.ops.reduction_ops import (  # noqa: F401
    argmax, argmin, count_nonzero, reduce_all, reduce_any, reduce_euclidean_norm,
    reduce_logsumexp, reduce_max, reduce_mean, reduce_min, reduce_prod, reduce_std, reduce_sum,
    reduce_variance,
)
from dtf.ops.array_ops import invert_permutation, unsorted_segment_sum  # noqa: F401
from dtf.ops.nn_ops import (  # noqa: F401
    in_top_k, l2_normalize, log_sigmoid, log_softmax, softmax, softplus, softsign, top_k,
)
from dtf.ops.segment_ops import (  # noqa: F401
    segment_max, segment_mean, segment_min, segment_prod, segment_sum, unsorted_segment_max,
    unsorted_segment_mean, unsorted_segment_min, unsorted_segment_prod, unsorted_segment_sqrt_n,
)
from dtf.ops.special_math_ops import (  # noqa: F401
    digamma, erfc, is_non_decreasing, is_strictly_increasing, lbeta, lgamma, multiply_no_nan,
    polygamma, rint, xlogy,
)
from dtf.ops.math_ops import xdivy  # noqa: F401
from dtf.ops.array_extra_ops import bincount  # noqa: F401
from dtf.ops.confusion_matrix import confusion_matrix  # noqa: F401,E402
