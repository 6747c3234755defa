"""tf.random: random tensors and seeds."""
from dtf.ops.random_ops import *  # noqa: F401,F403
from dtf.ops.random_ops import categorical, normal, shuffle, uniform  # noqa: F401
