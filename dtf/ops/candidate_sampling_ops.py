"""Candidate samplers (tf.nn.uniform_candidate_sampler, log_uniform_candidate_sampler,
all_candidate_sampler) and compute_accidental_hits: what nce_loss and
sampled_softmax_loss draw their negative classes with.

The samplers are random ops under TF1's seed rules (dtf/ops/random_ops.py); their draws
come from numpy, so the sampled classes differ from TF's while the expected counts follow
TF's formulas. Samplers in dtf/kernels/reference/candidate_sampling.py.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape
from .common import convert
from .random_ops import get_seed

__all__ = ["uniform_candidate_sampler", "log_uniform_candidate_sampler",
           "all_candidate_sampler", "compute_accidental_hits"]

SAMPLER_OPS = ("UniformCandidateSampler", "LogUniformCandidateSampler", "AllCandidateSampler")


def _sampler_infer(inputs, attrs):
    true_classes = inputs[0]
    n = attrs["num_sampled"]
    batch = true_classes.shape[0] if true_classes.shape.ndims == 2 else None
    return [(dtypes.int64, TensorShape([n])),
            (dtypes.float32, TensorShape([batch, attrs["num_true"]])),
            (dtypes.float32, TensorShape([n]))]


for _op in SAMPLER_OPS:
    register_op(_op, stateful=True)(_sampler_infer)
    NotDifferentiable(_op)


def _sample(op_type, true_classes, num_true, num_sampled, unique, seed, name, **attrs):
    with _ops.name_scope(name, op_type, [true_classes]) as scope:
        true_classes = convert(true_classes, "true_classes", dtype=dtypes.int64)
        if true_classes.shape.ndims not in (None, 2):
            raise ValueError(f"true_classes must be a matrix [batch_size, num_true], got shape "
                             f"{true_classes.shape}")
        seed1, seed2 = get_seed(seed)
        op = _ops.make_op(op_type, [true_classes],
                          {"num_true": int(num_true), "num_sampled": int(num_sampled),
                           "unique": bool(unique), "seed": seed1 or 0, "seed2": seed2 or 0,
                           **attrs}, name=scope)
    return tuple(op.outputs)


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """(sampled_candidates, true_expected_count, sampled_expected_count): ``num_sampled``
    classes drawn uniformly from [0, range_max) (distinct if ``unique``)."""
    return _sample("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                   seed, name, range_max=int(range_max))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """As uniform_candidate_sampler, drawing class c with probability
    log((c + 2) / (c + 1)) / log(range_max + 1) (Zipfian: frequent classes first)."""
    return _sample("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                   seed, name, range_max=int(range_max))


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """Classes 0 .. num_sampled - 1, each with expected count 1 (for testing)."""
    return _sample("AllCandidateSampler", true_classes, num_true, num_sampled, unique, seed,
                   name)


@register_op("ComputeAccidentalHits")
def _accidental_hits_infer(inputs, attrs):
    return [(dtypes.int32, TensorShape([None])), (dtypes.int64, TensorShape([None])),
            (dtypes.float32, TensorShape([None]))]


NotDifferentiable("ComputeAccidentalHits")


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """(indices, ids, weights): for each true class of batch row i that was sampled, (i,
    the last position j it was sampled at, -FLT_MAX), to be added to the sampled logits."""
    with _ops.name_scope(name, "ComputeAccidentalHits",
                         [true_classes, sampled_candidates]) as scope:
        true_classes = convert(true_classes, "true_classes", dtype=dtypes.int64)
        sampled = convert(sampled_candidates, "sampled_candidates", dtype=dtypes.int64)
        seed1, seed2 = get_seed(seed)
        op = _ops.make_op("ComputeAccidentalHits", [true_classes, sampled],
                          {"num_true": int(num_true), "seed": seed1 or 0, "seed2": seed2 or 0},
                          name=scope)
    return tuple(op.outputs)
