"""Summary ops: ScalarSummary, HistogramSummary, MergeSummary and their TF1 constructors.

Each op outputs a scalar tf.string holding a serialized ``Summary`` proto; the kernels
are in dtf/kernels/cpu/summary.py. As in TF1, a summary named "loss" creates a name scope
"loss", its op takes that scope's name and its tag is the scope ("loss", "loss_1", or
"train/loss" under ``tf.name_scope("train")``).
"""
from __future__ import annotations

import logging
import re

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.ops.common import convert

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")
_REAL_DTYPES = frozenset(d for d in dtypes.ALL if d.is_floating or d.is_integer)


def _string_scalar(inputs, attrs):
    return [(dtypes.string, [])]


for _op in ("ScalarSummary", "HistogramSummary", "MergeSummary"):
    register_op(_op)(_string_scalar)
    NotDifferentiable(_op)


def clean_tag(name):
    """TF's tag cleaning: characters other than [-/\\w.] become '_', leading '/' go."""
    if name is None:
        return None
    new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if new_name != name:
        logging.info("Summary name %s is illegal; using %s instead.", name, new_name)
    return new_name


def _summary_values(values, op_type):
    t = convert(values, name="values")
    if t.dtype.base_dtype not in _REAL_DTYPES:
        raise TypeError(f"Value passed to parameter 'values' has DataType {t.dtype.name} not in "
                        f"list of allowed values for {op_type}: real number types")
    return t


def _collect(op_output, collections, default_collections):
    for key in default_collections if collections is None else collections:
        _ops.add_to_collection(key, op_output)


def _summary_op(op_type, name, values, collections, family):
    """Builds a one-value summary op inside TF1's summary scope (family/name)."""
    name, family = clean_tag(name), clean_tag(family)
    scope_base = name if family is None else f"{family}/{name}"
    with _ops.name_scope(scope_base, None, [values]) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        tags = convert(tag, name="tag" if op_type == "HistogramSummary" else "tags",
                       dtype=dtypes.string)
        t = _summary_values(values, op_type)
        out = _ops.make_tensor(op_type, [tags, t], {"T": t.dtype}, name=scope)
    _collect(out, collections, [_ops.GraphKeys.SUMMARIES])
    return out


def scalar(name, tensor, collections=None, family=None):
    """A summary with one ``simple_value`` per element of ``tensor`` (a scalar in practice)."""
    return _summary_op("ScalarSummary", name, tensor, collections, family)


def histogram(name, values, collections=None, family=None):
    """A summary with a histogram of ``values``, bucketed like TF (exponential buckets)."""
    return _summary_op("HistogramSummary", name, values, collections, family)


def merge(inputs, collections=None, name=None):
    """One Summary holding the values of all ``inputs``; duplicate tags fail at run time."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("List argument 'inputs' to 'MergeSummary' Op with length 0 shorter "
                         "than minimum length 1.")
    with _ops.name_scope(name, "Merge", inputs):
        tensors = [convert(x, name="inputs", dtype=dtypes.string) for x in inputs]
        out = _ops.make_tensor("MergeSummary", tensors, {"N": len(tensors)}, name=name)
    _collect(out, collections, [])
    return out


def merge_all(key=_ops.GraphKeys.SUMMARIES, scope=None, name=None):
    """Merges every summary in collection ``key``; None when it is empty."""
    summary_ops = _ops.get_collection(key, scope=scope)
    if not summary_ops:
        return None
    return merge(summary_ops, name=name)


__all__ = ["scalar", "histogram", "merge", "merge_all"]
