"""GPU kernels of the variable, update and random ops, in host memory.

Variables live in the task's ResourceManager as host arrays whatever device their ops are
placed on, so a model built under ``tf.device('/gpu:0')`` runs without soft placement:
these kernels copy device inputs to the host and run the CPU kernel. Values the partition
reads from a variable are copied to the device by the first GPU kernel that uses them.
The scans and top_k have no CUDA kernel yet and run the same way (HOST_RUN_OPS).
"""
from __future__ import annotations

from dtf.ops.scatter_ops import SCATTER_ND_OPS, SCATTER_OPS, SPARSE_APPLY_OPS
from dtf.kernels.cpu.state import UPDATES
from dtf.kernels.reference.candidate_sampling import CANDIDATE_SAMPLERS
from dtf.kernels.registry import lookup, register_kernel
from . import device as D

HOST_OPS = ("VariableV2", "Assign", "AssignAdd", "AssignSub", "IsVariableInitialized", "ValueOrInitial",
            "RandomStandardNormal", "RandomUniform", "TruncatedNormal", "RandomUniformInt",
            "RandomShuffle", "Multinomial", *UPDATES)
HOST_RUN_OPS = ("Cumsum", "Cumprod", "TopKV2")


def _on_host(op):
    def factory(node):
        cpu = lookup(op, "CPU", node.dtype_key).factory(node)
        return lambda ctx, *xs: cpu(ctx, *[D.to_host(x) for x in xs])

    return factory


for _op in HOST_OPS + HOST_RUN_OPS:
    register_kernel(_op, "GPU", label="host memory")(_on_host(_op))

# Row updates of variables (scatter ops, sparse optimizer updates) write the host arrays
# the variables are, and the candidate samplers draw like the other random ops.
for _op in (*SCATTER_OPS, *SCATTER_ND_OPS, *SPARSE_APPLY_OPS, *CANDIDATE_SAMPLERS):
    register_kernel(_op, "GPU", label="host memory")(_on_host(_op))

# Graph utilities run on the host as well: Print/PrintV2 write and Assert/CheckNumerics
# inspect values there (TF keeps their inputs in host memory too), a py_func is Python,
# and IdentityN (custom_gradient's pass-through) only forwards its inputs.
HOST_RUN_UTILITY_OPS = ("Print", "PrintV2", "Assert", "CheckNumerics", "PyFunc",
                        "PyFuncStateless", "IdentityN")
for _op in HOST_RUN_UTILITY_OPS:
    register_kernel(_op, "GPU", label="host memory")(_on_host(_op))
