"""tf.contrib.rnn: the cells and the static drivers, as TF 1.15 exports them there."""
from dtf.ops.rnn import static_bidirectional_rnn, static_rnn  # noqa: F401
from dtf.ops.rnn_cell import *  # noqa: F401,F403
