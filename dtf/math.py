"""tf.math: TF 1.x's math namespace. The same functions as at the top level and in tf.nn
(tf.math.log is tf.log, tf.math.top_k is tf.nn.top_k), plus those TF keeps here:
divide_no_nan, log_sigmoid, l2_normalize, reduce_variance, reduce_std and
reduce_euclidean_norm.

Each family says which of its functions are tf.math's in MATH_API, beside its __all__,
so an op is exported once, where it is defined.
"""
import importlib as _importlib

_FAMILIES = ("math_ops", "reduction_ops", "array_ops", "nn_ops", "segment_ops", "special_math_ops",
             "array_extra_ops", "confusion_matrix")
for _family in map(_importlib.import_module, ("dtf.ops." + f for f in _FAMILIES)):
    globals().update({name: getattr(_family, name) for name in _family.MATH_API})
