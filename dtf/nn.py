"""tf.nn: activations, softmax and cross-entropy, conv2d, pooling, dropout."""
from dtf.ops.nn_ops import *  # noqa: F401,F403
from dtf.ops.nn_conv_ops import *  # noqa: F401,F403,E402
from dtf.ops.nn_norm_ops import *  # noqa: F401,F403,E402
from dtf.ops.nn_extra_ops import *  # noqa: F401,F403,E402
from dtf.ops.space_batch_ops import depth_to_space, space_to_batch, space_to_depth  # noqa: F401,E402
