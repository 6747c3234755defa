"""CPU kernels. Importing this package registers them all.

Where a Numba kernel beats numpy (fused elementwise chains, conv2d, pooling, softmax
cross-entropy) it is registered as the primary CPU kernel; so are lean numpy kernels of the
ops a training step runs every step (array, math, elementwise). Every other op is served by
its numpy reference implementation, registered as a fallback.
"""
from . import core  # noqa: F401
from . import elementwise  # noqa: F401
from . import array  # noqa: F401
from . import math  # noqa: F401
from . import sendrecv  # noqa: F401
from . import state  # noqa: F401
from . import random  # noqa: F401
from . import nn  # noqa: F401
from . import conv_fast  # noqa: F401
from . import adam_fast  # noqa: F401
from . import summary  # noqa: F401
from . import summary_media  # noqa: F401
from . import data_flow  # noqa: F401
from . import sparse_accumulator  # noqa: F401
from . import logging  # noqa: F401
from . import script  # noqa: F401
from . import scatter  # noqa: F401
from . import candidate_sampling  # noqa: F401
from . import control_flow  # noqa: F401
from . import dataset  # noqa: F401
from . import readers  # noqa: F401
from . import reference_fallback  # noqa: F401  (last: fills what nothing else claims)
