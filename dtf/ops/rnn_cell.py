"""tf.nn.rnn_cell: TF1's RNN cells."""
from dtf.ops.rnn_cell_impl import (  # noqa: F401
    BasicLSTMCell, BasicRNNCell, DropoutWrapper, GRUCell, LSTMCell, LSTMStateTuple, MultiRNNCell,
    ResidualWrapper, RNNCell,
)
