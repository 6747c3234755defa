"""The accelerators this process can use.

numba.cuda is imported on first call, never at ``import dtf``: importing it fixes whether
Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) is used for the whole process, and it
costs time that CPU-only programs should not pay.
"""
from __future__ import annotations

import os
import threading

_count = None
_lock = threading.Lock()


def gpu_count() -> int:
    """Number of CUDA devices (the simulator reports one); 0 without Numba or a driver."""
    global _count
    if _no_driver():  # two stat calls: cheap enough not to cache
        return 0
    if _count is None:
        with _lock:
            if _count is None:
                _count = _probe()
    return _count


def _no_driver() -> bool:
    """True when this machine visibly has no NVIDIA driver and the simulator is off: then
    there is no GPU, known without importing numba.cuda (which takes seconds)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    return not (os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia"))


def _probe() -> int:
    try:
        from numba import cuda
    except ImportError:
        return 0
    try:
        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - a broken driver means no usable GPU
        return 0


def gpu_names() -> list:
    """Local device names of the GPUs: ['/device:GPU:0', ...]."""
    return [f"/device:GPU:{i}" for i in range(gpu_count())]
