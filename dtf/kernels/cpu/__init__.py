"""CPU kernels, one module per family; each registers its kernels when imported, and the
kernel registry imports a family the first time one of its ops is looked up.

Where a Numba kernel beats numpy (fused elementwise chains, conv2d, pooling, softmax
cross-entropy) it is registered as the primary CPU kernel; so are lean numpy kernels of the
ops a training step runs every step (array, math, elementwise). Every other op is served by
its numpy reference implementation (dtf.kernels.reference), registered as a fallback.
"""
