"""Reference semantics of every op in numpy: the living definition each kernel (CPU and
CUDA) is tested against. One module per op family; entries take the NodeDef attrs and the
input arrays and return an array or a tuple of arrays.
"""
from .table import REFERENCE, reference  # noqa: F401
from . import elementwise  # noqa: F401
from . import array  # noqa: F401
from . import math  # noqa: F401
from . import nn  # noqa: F401
from . import random  # noqa: F401
from . import conv_extra  # noqa: F401
from . import scatter_nd  # noqa: F401
from . import segment  # noqa: F401
from . import sort  # noqa: F401
from . import matrix  # noqa: F401
from . import linalg  # noqa: F401
from . import special  # noqa: F401
from . import nn_extra  # noqa: F401
from . import array_extra  # noqa: F401
from . import linalg_decomp  # noqa: F401
from . import logging  # noqa: F401
from . import sparse  # noqa: F401
from . import sparse_combine  # noqa: F401
from . import image  # noqa: F401
from . import image_codec  # noqa: F401
from . import strings  # noqa: F401
from . import candidate_sampling  # noqa: F401
from . import tensor_array  # noqa: F401
from . import parsing  # noqa: F401
