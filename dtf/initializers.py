"""tf.initializers / tf.keras-free initializer classes."""
from dtf.ops.init_ops import *  # noqa: F401,F403
