"""CUDA kernels (Numba). Importing this package registers them for device type "GPU"; the
kernel registry imports it the first time a GPU kernel is looked up, never at ``import dtf``.

Under ``NUMBA_ENABLE_CUDASIM=1`` the same kernels run in Numba's CUDA simulator. Ops with
no kernel here have no GPU kernel: soft placement runs them on the task's CPU.
"""
from . import elementwise  # noqa: F401
from . import reductions  # noqa: F401
from . import matmul  # noqa: F401
from . import nn  # noqa: F401
from . import conv  # noqa: F401
from . import array  # noqa: F401
from . import slicing  # noqa: F401
from . import gather  # noqa: F401
from . import state  # noqa: F401
from . import host_nn  # noqa: F401
from . import host_array  # noqa: F401
