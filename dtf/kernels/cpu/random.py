"""CPU kernels: random ops. Each draws from its node's generator in the session state
(``ctx.rng``), so a seeded op repeats per session and advances across runs."""
from __future__ import annotations

from dtf.kernels.reference.random import SAMPLERS
from dtf.kernels.registry import register_kernel


def _stateful(sample):
    def factory(node):
        attrs = node.attrs
        name, seed, seed2 = node.name, attrs.get("seed", 0), attrs.get("seed2", 0)
        return lambda ctx, *xs: sample(ctx.rng(name, seed, seed2), attrs, *xs)

    return factory


for _op, _sample in SAMPLERS.items():
    register_kernel(_op, "CPU", label="numpy Generator", host=True)(_stateful(_sample))
