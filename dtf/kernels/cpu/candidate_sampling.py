"""CPU kernels: candidate samplers, drawing from the op's per-session generator like the
other random ops (dtf/kernels/cpu/random.py)."""
from __future__ import annotations

from dtf.kernels.reference.candidate_sampling import CANDIDATE_SAMPLERS
from dtf.kernels.registry import register_kernel

from .random import _stateful

for _op, _sample in CANDIDATE_SAMPLERS.items():
    register_kernel(_op, "CPU", label="numpy Generator", host=True)(_stateful(_sample))
