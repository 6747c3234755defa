"""tf.losses: TF1's loss functions, weights and reductions, and the LOSSES collection."""
from dtf.losses.losses_impl import (  # noqa: F401
    Reduction, absolute_difference, compute_weighted_loss, cosine_distance, hinge_loss,
    huber_loss, log_loss, mean_pairwise_squared_error, mean_squared_error,
    sigmoid_cross_entropy, softmax_cross_entropy, sparse_softmax_cross_entropy,
)
from dtf.losses.util import (  # noqa: F401
    add_loss, get_losses, get_regularization_loss, get_regularization_losses, get_total_loss,
)
