"""Reference semantics of the feature-column kernels (dtf/ops/feature_ops.py): TF's string
hash (FarmHash Fingerprint64), AsString of integers, Bucketize and the hashed SparseCross.
They have no CUDA kernels: on a GPU device they run on the host (strings live there)."""
from __future__ import annotations

import itertools

import numpy as np

from dtf.framework import errors
from dtf.framework.farmhash import fingerprint64, fingerprint_cat64
from dtf.ops import feature_ops  # noqa: F401  (the op definitions, wherever kernels load)
from .table import reference

_INT64_MAX = (1 << 63) - 1


def _bytes(v):
    return v.encode() if isinstance(v, str) else bytes(v)


@reference("StringToHashBucketFast", host=True)
def _string_to_hash_bucket_fast(attrs, x):
    n = int(attrs["num_buckets"])
    flat = np.asarray(x, dtype=object).reshape(-1)
    out = np.fromiter((fingerprint64(_bytes(v)) % n for v in flat), dtype=np.int64,
                      count=flat.size)
    return out.reshape(np.shape(x))


@reference("AsString", host=True)
def _as_string(attrs, x):
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        raise errors.UnimplementedError(None, None, f"AsString: dtf converts integers only, "
                                        f"got {x.dtype}")
    out = np.empty(x.shape, dtype=object)
    out.reshape(-1)[:] = [str(int(v)).encode() for v in x.reshape(-1)]
    return out


@reference("Bucketize", host=True)
def _bucketize(attrs, x):
    b = np.asarray(attrs["boundaries"], dtype=np.float64)
    # std::upper_bound: a value equal to a boundary goes to the bucket above it.
    return np.searchsorted(b, np.asarray(x, dtype=np.float64), side="right").astype(np.int32)


def _row_lists(indices, values, shape, batch):
    rows = [[] for _ in range(batch)]
    for idx, v in zip(np.asarray(indices).reshape(-1, max(1, np.asarray(indices).shape[-1])), values):
        rows[int(idx[0])].append(v)
    return rows


def _feature_hash(v):
    # SparseCross's int64 crossing: strings are fingerprinted, integers used as they are.
    if isinstance(v, (bytes, str)):
        return fingerprint64(_bytes(v))
    return int(v) & ((1 << 64) - 1)


@reference("SparseCross", host=True)
def _sparse_cross(attrs, *xs):
    if not attrs.get("hashed_output", False):
        raise errors.UnimplementedError(None, None, "SparseCross: dtf has the hashed form only")
    n = int(attrs["N"])
    indices, values, shapes, dense = xs[:n], xs[n:2 * n], xs[2 * n:3 * n], xs[3 * n:]
    batches = {int(np.asarray(s)[0]) for s in shapes} | {int(np.shape(d)[0]) for d in dense}
    if len(batches) != 1:
        raise errors.InvalidArgumentError(None, None, f"SparseCross: inputs have different "
                                          f"batch sizes {sorted(batches)}")
    batch = batches.pop()
    columns = [_row_lists(i, v, s, batch) for i, v, s in zip(indices, values, shapes)]
    columns += [[list(np.asarray(d)[r].reshape(-1)) for r in range(batch)] for d in dense]
    buckets = int(attrs["num_buckets"])
    key = int(attrs["hash_key"])
    out_idx, out_val, width = [], [], 0
    for r in range(batch):
        per_col = [[_feature_hash(v) for v in col[r]] for col in columns]
        k = 0
        for combo in itertools.product(*per_col):   # the last column varies fastest, as TF's
            h = key
            for f in combo:
                h = fingerprint_cat64(h, f)
            out_idx.append((r, k))
            out_val.append(h % buckets if buckets > 0 else h % _INT64_MAX)
            k += 1
        width = max(width, k)
    idx = np.asarray(out_idx, dtype=np.int64).reshape(-1, 2)
    return idx, np.asarray(out_val, dtype=np.int64), np.asarray([batch, width], dtype=np.int64)
