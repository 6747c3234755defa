"""tf.layers: TF1's layers as classes (Dense, Conv2D, ...) and functions (dense, conv2d, ...),
with variables named as TF names them. One module per family; ``base`` has Layer."""
from .base import InputSpec, Layer  # noqa: F401
from .core import *  # noqa: F401,F403
from .convolutional import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
