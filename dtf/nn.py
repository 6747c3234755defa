"""tf.nn: activations, softmax and cross-entropy, conv2d, pooling, dropout."""
from dtf.ops.nn_ops import *  # noqa: F401,F403
from dtf.ops.embedding_ops import *  # noqa: F401,F403,E402
