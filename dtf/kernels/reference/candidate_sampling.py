"""Reference semantics: candidate samplers and accidental hits (TF's RangeSampler rules).

A sampler draws ``num_sampled`` classes (distinct ones when ``unique``, by rejection) and
reports each class's expected count: p * num_sampled, or with rejection
1 - (1 - p) ** num_tries, as TF's ExpectedCountHelper computes it.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from .random import _reference
from .table import REFERENCE

CANDIDATE_SAMPLERS: dict = {}


def _uniform(rng, range_max):
    return (lambda n: rng.integers(0, range_max, size=n),
            lambda c: np.full(np.shape(c), 1.0 / range_max))


def _log_uniform(rng, range_max):
    log_range = np.log(range_max + 1.0)

    def draw(n):
        value = np.exp(rng.random(n) * log_range).astype(np.int64) - 1
        return value % range_max

    def prob(c):
        c = np.asarray(c, np.float64)
        return np.log((c + 2.0) / (c + 1.0)) / log_range

    return draw, prob


def _draw(draw, num_sampled, unique, range_max):
    """(candidates, number of draws it took)."""
    if not unique:
        return draw(num_sampled), num_sampled
    if num_sampled > range_max:
        raise errors.InvalidArgumentError(None, None, "Sampler's range is too small.")
    # Batches of draws, each value kept at its first appearance, until num_sampled are
    # kept; ``tries`` counts the draws up to the last one kept. Whole-array steps per
    # batch (a word2vec step's 64 of 100,000 took ~80 us value by value).
    picked, tries = np.zeros(0, np.int64), 0
    while picked.size < num_sampled:
        batch = np.asarray(draw(max(num_sampled - picked.size, 1) * 2), np.int64)
        order = np.argsort(batch, kind="stable")
        ordered = batch[order]
        new = np.zeros(batch.size, bool)  # first appearance in the batch
        new[order[np.concatenate([[True], ordered[1:] != ordered[:-1]])]] = True
        if picked.size:
            new &= ~np.isin(batch, picked)
        at = np.flatnonzero(new)[:num_sampled - picked.size]
        tries += batch.size if picked.size + at.size < num_sampled else int(at[-1]) + 1
        picked = np.concatenate([picked, batch[at]])
    return picked, tries


def _expected(p, num_sampled, tries):
    p = np.asarray(p, np.float64)
    if tries == num_sampled:
        return (p * num_sampled).astype(np.float32)
    return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)


def _check_true(attrs, true_classes, range_max=None):
    if true_classes.ndim != 2 or true_classes.shape[1] != attrs["num_true"]:
        raise errors.InvalidArgumentError(
            None, None, f"true_classes must be a matrix with {attrs['num_true']} columns "
            f"(num_true), got shape {list(true_classes.shape)}")
    bad = (true_classes < 0) | (true_classes >= range_max) if range_max is not None else None
    if bad is not None and bad.any():
        raise errors.InvalidArgumentError(
            None, None, f"`true_candidate` out of range [0, {range_max}), received "
            f"{int(true_classes[bad][0])}")


def _range_sampler(make):
    def sample(rng, attrs, true_classes):
        n, unique, range_max = attrs["num_sampled"], attrs["unique"], attrs["range_max"]
        _check_true(attrs, true_classes, range_max)
        if range_max < 1:
            raise errors.InvalidArgumentError(None, None, f"range_max must be positive, got "
                                                          f"{range_max}")
        draw, prob = make(rng, range_max)
        sampled, tries = _draw(draw, n, unique, range_max)
        return (sampled.astype(np.int64), _expected(prob(true_classes), n, tries),
                _expected(prob(sampled), n, tries))

    return sample


CANDIDATE_SAMPLERS["UniformCandidateSampler"] = _range_sampler(_uniform)
CANDIDATE_SAMPLERS["LogUniformCandidateSampler"] = _range_sampler(_log_uniform)


def _all_candidates(rng, attrs, true_classes):
    n = attrs["num_sampled"]
    _check_true(attrs, true_classes, n)
    return (np.arange(n, dtype=np.int64), np.ones(true_classes.shape, np.float32),
            np.ones(n, np.float32))


CANDIDATE_SAMPLERS["AllCandidateSampler"] = _all_candidates

for _op, _fn in CANDIDATE_SAMPLERS.items():
    REFERENCE[_op] = _reference(_fn)


def _accidental_hits(attrs, true_classes, sampled):
    _check_true(attrs, true_classes)
    # TF's kernel: each true class finds the last position it was sampled at.
    position = {int(s): j for j, s in enumerate(sampled)}
    indices, ids = [], []
    for i, row in enumerate(true_classes):
        for c in row:
            j = position.get(int(c))
            if j is not None:
                indices.append(i)
                ids.append(j)
    weights = np.full(len(indices), -np.finfo(np.float32).max, np.float32)
    return np.asarray(indices, np.int32), np.asarray(ids, np.int64), weights


REFERENCE.define("ComputeAccidentalHits", _accidental_hits, host=True)
