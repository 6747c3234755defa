"""CPU kernels of the summary ops: each returns a scalar string, a serialized Summary.

Histograms follow TF's ``histogram::Histogram``: default bucket limits grow by 10% from
1e-12 to 1e20, mirrored for negatives, with 0 and +-DBL_MAX; a value falls in the first
bucket whose limit is greater than it; runs of empty buckets are collapsed into one entry
carrying the run's last limit.
"""
from __future__ import annotations

import sys

import numpy as np

from dtf.framework import errors
from dtf.kernels.registry import register_kernel

_DBL_MAX = sys.float_info.max


def _default_bucket_limits() -> np.ndarray:
    positive = []
    v = 1.0e-12
    while v < 1.0e20:  # same float arithmetic as TF's loop, so the limits match bit for bit
        positive.append(v)
        v *= 1.1
    positive.append(_DBL_MAX)
    return np.array([-x for x in reversed(positive)] + [0.0] + positive)


DEFAULT_BUCKET_LIMITS = _default_bucket_limits()


def histogram_proto(values, limits=DEFAULT_BUCKET_LIMITS) -> proto.HistogramProto:
    """TF's Histogram::Add over ``values`` then EncodeToProto(preserve_zero_buckets=False)."""
    from dtf.summary import proto  # lazily: summaries are rare, start-up is not

    x = np.asarray(values, dtype=np.float64).ravel()
    index = np.minimum(np.searchsorted(limits, x, side="right"), len(limits) - 1)
    counts = np.bincount(index, minlength=len(limits)).astype(np.float64)
    # Keep non-empty buckets and the last bucket of each run of empty ones.
    next_nonempty = np.append(counts[1:] > 0, True)
    keep = (counts > 0) | next_nonempty
    return proto.HistogramProto(
        min=x.min() if x.size else _DBL_MAX, max=x.max() if x.size else -_DBL_MAX,
        num=float(x.size), sum=float(x.sum()), sum_squares=float(np.dot(x, x)),
        bucket_limit=limits[keep].tolist(), bucket=counts[keep].tolist())


def _string_scalar(data: bytes) -> np.ndarray:
    return np.array(data, dtype=object)


def _tag(t) -> str:
    return t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t)


def _shape_str(a) -> str:
    return "[" + ",".join(str(d) for d in np.shape(a)) + "]"


def _invalid(msg):
    return errors.InvalidArgumentError(None, None, msg)


@register_kernel("ScalarSummary", "CPU")
def scalar_summary(node):
    from dtf.summary import proto  # lazily: summaries are rare, start-up is not

    def compute(ctx, tags, values):
        tags, values = np.asarray(tags, dtype=object), np.asarray(values)
        if tags.shape != values.shape:
            single = f" (tag '{_tag(tags.flat[0])}')" if tags.size == 1 else ""
            raise _invalid(f"tags and values not the same shape: {_shape_str(tags)} != "
                           f"{_shape_str(values)}{single}")
        summary = proto.Summary()
        for t, v in zip(tags.flat, values.flat):
            summary.value.add(tag=_tag(t), simple_value=float(v))
        return _string_scalar(summary.SerializeToString())

    return compute


@register_kernel("HistogramSummary", "CPU")
def histogram_summary(node):
    from dtf.summary import proto  # lazily: summaries are rare, start-up is not

    def compute(ctx, tag, values):
        if np.ndim(tag) != 0:
            raise _invalid("tags must be scalar")
        values = np.asarray(values, dtype=np.float64)
        if np.isnan(values).any():
            raise _invalid(f"Nan in summary histogram for: {node.name}")
        if np.isinf(values).any():
            raise _invalid(f"Infinity in summary histogram for: {node.name}")
        summary = proto.Summary()
        summary.value.add(tag=_tag(np.asarray(tag, dtype=object).item()), histo=histogram_proto(values))
        return _string_scalar(summary.SerializeToString())

    return compute


@register_kernel("MergeSummary", "CPU")
def merge_summary(node):
    from dtf.summary import proto  # lazily: summaries are rare, start-up is not

    def compute(ctx, *inputs):
        seen, parts = set(), []
        for data in (s for x in inputs for s in np.asarray(x, dtype=object).flat):
            data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            try:
                summary = proto.Summary.FromString(data)
            except proto.DecodeError:
                raise _invalid("Could not parse one of the summary inputs") from None
            for value in summary.value:
                if value.tag and value.tag in seen:
                    raise _invalid(f"Duplicate tag {value.tag} found in summary inputs")
                seen.add(value.tag)
            # Concatenated Summary messages parse as one with all the values (repeated
            # fields append), and fields this codec does not know survive untouched.
            parts.append(data)
        return _string_scalar(b"".join(parts))

    return compute
