"""Reference semantics: random ops.

Each sampler draws from a numpy Generator given to it: the CPU kernels pass the op's
persistent per-session generator, the reference entries a fresh one seeded from the op's
(seed, seed2) attrs, so a seeded op's first run in a session matches its reference.
"""
from __future__ import annotations

import numpy as np

from .table import REFERENCE

SAMPLERS: dict = {}


def sampler(op_type):
    def deco(fn):
        SAMPLERS[op_type] = fn
        return fn

    return deco


def seeded_generator(seed, seed2):
    """The generator of a random op: (0, 0) means nondeterministic, as in TF."""
    if seed or seed2:
        return np.random.Generator(np.random.PCG64([int(seed) & 0xFFFFFFFF, int(seed2) & 0xFFFFFFFF]))
    return np.random.default_rng()


def _dims(shape):
    shape = np.asarray(shape)
    if shape.ndim != 1:
        raise ValueError(f"shape must be a vector of ints, got shape {list(shape.shape)}")
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise ValueError(f"Dimension must be non-negative, got shape {dims}")
    return dims


def _float(attrs, draw):
    """Draws in float64 (float32 for float32) and casts to the op's dtype."""
    np_dtype = np.dtype(attrs["dtype"].as_numpy_dtype)
    work = np.float32 if np_dtype == np.float32 else np.float64
    return np.asarray(draw(work)).astype(np_dtype, copy=False)


@sampler("RandomStandardNormal")
def _standard_normal(rng, attrs, shape):
    return _float(attrs, lambda dt: rng.standard_normal(_dims(shape), dtype=dt))


@sampler("RandomUniform")
def _uniform(rng, attrs, shape):
    return _float(attrs, lambda dt: rng.random(_dims(shape), dtype=dt))


# Elements per slice when looking for values to redraw: the slice's temporaries stay small.
_SCAN = 1 << 16


def _truncated(rng, dims, dt):
    """Standard normal with every value beyond 2 redrawn (TF's TruncatedNormal), in
    rounds: each round redraws the values still beyond 2, in index order. The first scan
    goes slice by slice and later rounds look at the redrawn values only, so no
    temporary as large as the output is made (a 50,000 x 128 table's initializer made
    three, 37 MB, and the allocator kept them resident on the task afterwards)."""
    out = rng.standard_normal(dims, dtype=dt)
    flat = out.reshape(-1)
    bad = [np.flatnonzero(np.abs(flat[i:i + _SCAN]) > 2) + i for i in range(0, flat.size, _SCAN)]
    bad = np.concatenate(bad) if bad else np.zeros(0, np.intp)
    while bad.size:
        redrawn = rng.standard_normal(bad.size, dtype=dt)
        flat[bad] = redrawn
        bad = bad[np.abs(redrawn) > 2]
    return out


@sampler("TruncatedNormal")
def _truncated_normal(rng, attrs, shape):
    return _float(attrs, lambda dt: _truncated(rng, _dims(shape), dt))


@sampler("RandomUniformInt")
def _uniform_int(rng, attrs, shape, lo, hi):
    for v, what in ((lo, "minval"), (hi, "maxval")):
        if np.ndim(v) != 0:
            raise ValueError(f"{what} must be 0-D, got shape {list(np.shape(v))}")
    if lo >= hi:
        raise ValueError(f"Need minval < maxval: {lo} >= {hi}")
    return rng.integers(lo, hi, size=_dims(shape), dtype=attrs["Tout"].as_numpy_dtype)


@sampler("RandomShuffle")
def _shuffle(rng, attrs, value):
    if value.ndim == 0:
        return value.copy()
    return rng.permutation(value)


@sampler("Multinomial")
def _multinomial(rng, attrs, logits, num_samples):
    n = int(num_samples)
    if logits.ndim != 2:
        raise ValueError(f"logits should be a matrix, got shape {list(logits.shape)}")
    if n < 0:
        raise ValueError(f"num_samples should be nonnegative, got {n}")
    if logits.shape[1] == 0 and n:
        raise ValueError("num_classes should be positive, got 0")
    out_type = attrs["output_dtype"].as_numpy_dtype
    if logits.shape[0] == 0 or n == 0:
        return np.zeros((logits.shape[0], n), out_type)
    x = logits.astype(np.float64)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    u = rng.random((x.shape[0], n)) * cdf[:, -1:]
    idx = [np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)]
    return np.minimum(np.asarray(idx), x.shape[1] - 1).astype(out_type)


def _reference(fn):
    return lambda attrs, *xs: fn(seeded_generator(attrs.get("seed", 0), attrs.get("seed2", 0)), attrs, *xs)


for _op, _fn in SAMPLERS.items():
    REFERENCE[_op] = _reference(_fn)
