"""CUDA kernels (Numba), registered for device type "GPU"; the kernel registry imports a
module the first time one of its ops is looked up on a GPU, never at ``import dtf``.

Under ``NUMBA_ENABLE_CUDASIM=1`` the same kernels run in Numba's CUDA simulator. Ops with
no kernel here run on the host when their CPU kernel says ``host=True``; the others have no
GPU kernel: soft placement runs them on the task's CPU.
"""
