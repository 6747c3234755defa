"""Kernels: the registry, the numpy reference semantics, CPU (Numba/numpy) and CUDA."""
