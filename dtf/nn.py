"""tf.nn: activations, softmax and cross-entropy, conv2d, pooling, dropout."""
from dtf.ops.nn_ops import *  # noqa: F401,F403
from dtf.ops.nn_conv_ops import *  # noqa: F401,F403,E402
from dtf.ops.nn_norm_ops import *  # noqa: F401,F403,E402
from dtf.ops.nn_extra_ops import *  # noqa: F401,F403,E402
from dtf.ops.space_batch_ops import depth_to_space, space_to_batch, space_to_depth  # noqa: F401,E402
from dtf.ops.embedding_ops import *  # noqa: F401,F403,E402
from dtf.ops.candidate_sampling_ops import *  # noqa: F401,F403,E402
from dtf.ops.sampled_losses import *  # noqa: F401,F403,E402
from dtf.ops import rnn_cell  # noqa: F401,E402
from dtf.ops.rnn import (  # noqa: F401,E402
    bidirectional_dynamic_rnn, dynamic_rnn, static_bidirectional_rnn, static_rnn,
)
