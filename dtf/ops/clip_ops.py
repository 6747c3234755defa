"""Clipping by value and by (global) L2 norm, composed from elementwise ops as in TF1, so
their gradients are those of Minimum/Maximum/Select/Sqrt."""
from __future__ import annotations

from collections.abc import Sequence

from dtf.framework import ops as _ops
from dtf.framework.indexed_slices import IndexedSlices
from . import math_ops
from .common import convert

__all__ = ["clip_by_value", "clip_by_norm", "clip_by_global_norm", "global_norm"]


def _no_broadcast(values, result):
    """Clip bounds must not broadcast the clipped tensor to a larger shape."""
    values.shape.merge_with(result.shape)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clips ``t`` elementwise to [clip_value_min, clip_value_max]."""
    with _ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as scope:
        values = convert(t, "t")
        t_min = math_ops.minimum(values, clip_value_max)
        _no_broadcast(values, t_min)
        t_max = math_ops.maximum(t_min, clip_value_min, name=scope)
        _no_broadcast(values, t_max)
    return t_max


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """Scales ``t`` so its L2 norm over ``axes`` is at most ``clip_norm``."""
    from .array_ops import identity, ones_like
    from .reduction_ops import reduce_sum

    with _ops.name_scope(name, "clip_by_norm", [t, clip_norm]) as scope:
        values = convert(_dense_part(t), "t")
        l2sum = reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        # Two where()s keep sqrt's gradient finite when the norm is zero.
        l2sum_safe = math_ops.where(pred, l2sum, ones_like(l2sum))
        l2norm = math_ops.where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        _no_broadcast(values, intermediate)
        return _like(t, identity(intermediate / math_ops.maximum(l2norm, clip_norm), name=scope))


def _as_list(t_list):
    if not isinstance(t_list, Sequence) or isinstance(t_list, (str, bytes)):
        raise TypeError("t_list should be a sequence")
    return list(t_list)


def _dense_part(t):
    """An IndexedSlices' values (clipping scales its rows; the norm is of those rows, as in
    TF), anything else as it is."""
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t, values):
    """``values`` in the form of ``t``: IndexedSlices with t's indices, or a Tensor."""
    return IndexedSlices(values, t.indices, t.dense_shape) if isinstance(t, IndexedSlices) else values


def _converted(t_list):
    return [None if t is None else convert(_dense_part(t), f"t_{i}") for i, t in enumerate(t_list)]


def global_norm(t_list, name=None):
    """sqrt(sum of squares of every element of every tensor); None entries are skipped."""
    from .reduction_ops import reduce_sum

    t_list = _as_list(t_list)
    with _ops.name_scope(name, "global_norm", t_list):
        squared = []
        for v in _converted(t_list):
            if v is not None:
                with _ops.colocate_with(v.op):
                    squared.append(reduce_sum(math_ops.square(v)))
        if not squared:
            raise ValueError("global_norm needs at least one tensor that is not None")
        total = math_ops.add_n([math_ops.cast(s, squared[0].dtype) for s in squared])
        return math_ops.sqrt(total, name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """Scales every tensor by clip_norm / max(global_norm, clip_norm); returns
    (clipped list, the global norm). A non-finite norm makes every value NaN, as in TF."""
    from .array_ops import identity

    t_list = _as_list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with _ops.name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as scope:
        use_norm = convert(use_norm, "use_norm")
        clip_norm = convert(clip_norm, "clip_norm", dtype=use_norm.dtype)
        one = convert(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * math_ops.minimum(one / use_norm, one / clip_norm)
        scale = scale_for_finite + (use_norm - use_norm)
        clipped = []
        for i, v in enumerate(_converted(t_list)):
            if v is None:
                clipped.append(None)
                continue
            # TF names these "<scope>/<scope>/_i" (the scope string plus "_i").
            with _ops.colocate_with(v.op):
                clipped.append(_like(t_list[i], identity(v * math_ops.cast(scale, v.dtype),
                                                         name=f"{scope}_{i}")))
    return clipped, use_norm
