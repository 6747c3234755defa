"""The Numba loop behind dtf.kernels.cpu.adam_fast (loaded like .nn_jit, see .jit_loading)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def adam_into(var, m, v, grad, lr_t, one_minus_beta1, one_minus_beta2, epsilon, nesterov,
              new_var, new_m, new_v):
    """One pass of Adam over flat arrays, in the arithmetic (and order) of the numpy
    update in .state: m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2), var -= step."""
    for i in range(var.shape[0]):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta1
        vi = v[i] + (g * g - v[i]) * one_minus_beta2
        if nesterov:
            num = (g * one_minus_beta1 + (1 - one_minus_beta1) * mi) * lr_t
        else:
            num = mi * lr_t
        new_var[i] = var[i] - num / (np.sqrt(vi) + epsilon)
        new_m[i] = mi
        new_v[i] = vi
