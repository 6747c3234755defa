"""Reference semantics of Unique and UniqueWithCounts (sort and argsort are composites
over TopKV2)."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference


def _unique(attrs, x):
    x = np.asarray(x)
    if x.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"unique expects a 1D vector, got shape "
                                          f"{list(x.shape)}")
    _, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    order = np.argsort(first, kind="stable")  # TF keeps the order of first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    out_idx = attrs.get("out_idx").as_numpy_dtype
    return x[first[order]], rank[inverse.reshape(-1)].astype(out_idx), counts[order].astype(out_idx)


@reference("Unique", host=True)
def _unique_ref(attrs, x):
    return _unique(attrs, x)[:2]


@reference("UniqueWithCounts", host=True)
def _unique_with_counts_ref(attrs, x):
    return _unique(attrs, x)
