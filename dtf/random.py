"""tf.random: random tensors and seeds."""
from dtf.ops.random_ops import *  # noqa: F401,F403
