"""tf.initializers / tf.keras-free initializer classes."""
from dtf.ops.init_ops import *  # noqa: F401,F403
from dtf.ops.init_ops import INITIALIZERS_NAMESPACE as _SHORT_NAMES  # noqa: E402
from dtf.ops.variables import (  # noqa: E402,F401
    global_variables_initializer as global_variables,
    local_variables_initializer as local_variables, variables_initializer as variables,
)

globals().update(_SHORT_NAMES)  # tf.initializers.zeros, .glorot_uniform, ...
