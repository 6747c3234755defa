"""tf.nn.embedding_lookup and embedding_lookup_sparse over one table, a list of shards or a
PartitionedVariable, built as TF builds them.

Each shard's gather is colocated with the shard, so in a cluster the ids go to the
parameter servers and only the looked-up rows come back; the gather's gradient is
IndexedSlices, so training sends back only those rows too.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from . import array_ops, clip_ops, math_ops
from .reduction_ops import reduce_sum
from .segment_ops import dynamic_partition, segment_sum
from .stitch_ops import parallel_dynamic_stitch

__all__ = ["embedding_lookup", "embedding_lookup_sparse"]


def _as_shard_list(params):
    from .partitioned_variables import PartitionedVariable

    if isinstance(params, PartitionedVariable):
        return list(params)
    if isinstance(params, (list, tuple)):
        params = list(params)
        if not params:
            raise ValueError("Need at least one param")
        return params
    return [params]


def _rank(x):
    ndims = _ops.convert_to_tensor(x).get_shape().ndims
    return (ndims, True) if ndims else (array_ops.rank(x), False)


def _clip(params, ids, max_norm):
    """Rows of ``params`` (one per id) clipped to L2 norm ``max_norm``, if given."""
    if max_norm is None:
        return params
    ids_rank, ids_static = _rank(ids)
    params_rank, params_static = _rank(params)
    axes = (list(range(ids_rank, params_rank)) if ids_static and params_static
            else array_ops.range(ids_rank, params_rank))
    return clip_ops.clip_by_norm(params, max_norm, axes=axes)


def _dim0(param):
    shape = param.get_shape()
    if shape.ndims is None:
        return None
    d = shape[0]
    return getattr(d, "value", d)


def _colocated(param):
    return _ops.colocate_with(param.op if hasattr(param, "op") else param)


def _partition_ids(params, flat_ids, partition_strategy):
    """(shard of each id, its row within that shard) under TF's "mod" or "div" rule."""
    n = len(params)
    if partition_strategy == "mod":
        return flat_ids % n, flat_ids // n
    if partition_strategy != "div":
        raise ValueError("Unrecognized partition strategy: " + partition_strategy)
    known = [_dim0(p) for p in params]
    if all(k is not None for k in known) and sum(known):
        num_total_ids = _ops.convert_to_tensor(sum(known), dtype=flat_ids.dtype)
    else:
        sizes = []
        for p, k in zip(params, known):
            if k is not None:
                sizes.append(k)
            else:
                with _colocated(p):  # read beside the shard: no shard moves for it
                    sizes.append(array_ops.shape(p)[0])
        num_total_ids = reduce_sum(math_ops.cast(array_ops.stack(sizes), flat_ids.dtype))
    ids_per_partition = num_total_ids // n
    extras = num_total_ids % n
    assignments = math_ops.maximum(flat_ids // (ids_per_partition + 1),
                                   (flat_ids - extras) // ids_per_partition)
    new_ids = math_ops.where(assignments < extras, flat_ids % (ids_per_partition + 1),
                             (flat_ids - extras) % ids_per_partition)
    return assignments, new_ids


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """The rows of ``params`` at ``ids``; ``params`` is one tensor or variable, a list of
    shards (partitioned by ``partition_strategy``, "mod" or "div") or a PartitionedVariable.
    ``max_norm`` clips each looked-up row to that L2 norm. ``validate_indices`` is accepted
    and unused, as in TF (out-of-range ids always fail)."""
    params = _as_shard_list(params)
    with _ops.name_scope(name, "embedding_lookup", params + [ids]) as name:
        n = len(params)
        ids = _ops.convert_to_tensor(ids, name="ids")
        if n == 1:
            with _colocated(params[0]):
                result = _clip(array_ops.gather(params[0], ids, name=name), ids, max_norm)
            # No colocation constraint on what follows, as with several shards.
            return array_ops.identity(result)
        flat_ids = array_ops.reshape(ids, [-1])
        original_indices = array_ops.range(array_ops.size(flat_ids))
        assignments, new_ids = _partition_ids(params, flat_ids, partition_strategy)
        assignments = math_ops.cast(assignments, dtypes.int32)
        gather_ids = dynamic_partition(new_ids, assignments, n)
        pindices = dynamic_partition(original_indices, assignments, n)
        partitioned = []
        for p in range(n):
            with _colocated(params[p]):
                partitioned.append(array_ops.gather(params[p], gather_ids[p]))
        ret = parallel_dynamic_stitch(pindices, partitioned, name=name)
        element_shape = params[0].get_shape()[1:]
        for p in params[1:]:
            element_shape = element_shape.merge_with(p.get_shape()[1:])
        if element_shape.is_fully_defined():
            element_dims = element_shape.as_list()
        else:
            with _colocated(params[0]):  # the shape read where the shard lives
                element_dims = array_ops.shape(params[0])[1:]
        ret = array_ops.reshape(ret, array_ops.concat([array_ops.shape(ids), element_dims], 0))
        ret.set_shape(ids.get_shape().concatenate(element_shape))
        return _clip(ret, ids, max_norm)


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None):
    """Combines (``combiner``: "sum", "mean" or "sqrtn", default "mean") the embeddings of
    each row of the SparseTensor ``sp_ids``, weighted by ``sp_weights`` (or 1)."""
    from .sparse_ops import SparseTensor

    if combiner is None:
        combiner = "mean"
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError("combiner must be one of 'mean', 'sqrtn' or 'sum'")
    params = _as_shard_list(params)
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError("sp_ids must be SparseTensor")
    ignore_weights = sp_weights is None
    if not ignore_weights and not isinstance(sp_weights, SparseTensor):
        raise TypeError("sp_weights must be either None or SparseTensor")
    with _ops.name_scope(name, "embedding_lookup_sparse", params + [sp_ids]) as name:
        segment_ids = sp_ids.indices[:, 0]
        if segment_ids.dtype != dtypes.int32:
            segment_ids = math_ops.cast(segment_ids, dtypes.int32)
        ids = sp_ids.values
        ids, idx = _unique_ids(ids)
        embeddings = embedding_lookup(params, ids, partition_strategy=partition_strategy,
                                      max_norm=max_norm)
        if not ignore_weights:
            weights = sp_weights.values
            if weights.dtype != embeddings.dtype:
                weights = math_ops.cast(weights, embeddings.dtype)
            embeddings = array_ops.gather(embeddings, idx)
            # Weights broadcast over each embedding's trailing dimensions.
            ones = array_ops.fill(array_ops.expand_dims(array_ops.rank(embeddings) - 1, 0), 1)
            bcast_shape = array_ops.concat([array_ops.shape(weights), ones], 0)
            orig_weights_shape = weights.get_shape()
            weights = array_ops.reshape(weights, bcast_shape)
            if embeddings.get_shape().ndims is not None:
                weights.set_shape(orig_weights_shape.concatenate(
                    [1] * (embeddings.get_shape().ndims - 1)))
            embeddings *= weights
            if combiner == "sum":
                return segment_sum(embeddings, segment_ids, name=name)
            # An empty batch row gives zeros, not 0/0 (div_no_nan, as TF 2 builds it).
            weight_sum = segment_sum(weights, segment_ids)
            if combiner == "mean":
                embeddings = segment_sum(embeddings, segment_ids)
                return math_ops.div_no_nan(embeddings, weight_sum, name=name)
            weight_sum_sqrt = math_ops.sqrt(segment_sum(math_ops.pow(weights, 2),
                                                            segment_ids))
            embeddings = segment_sum(embeddings, segment_ids)
            return math_ops.div_no_nan(embeddings, weight_sum_sqrt, name=name)
        return _sparse_segment_combine(embeddings, idx, segment_ids, combiner, name)


def _unique_ids(ids):
    from .sort_ops import unique

    return unique(ids)


# TF's sparse_segment_{sum,mean,sqrt_n} over sorted segment ids, with segment_sum: as many
# output rows as the last segment id + 1.
def _sparse_segment_combine(data, indices, segment_ids, combiner, name):
    summed = segment_sum(array_ops.gather(data, indices), segment_ids)
    if combiner == "sum":
        return array_ops.identity(summed, name=name)
    ones = array_ops.ones_like(segment_ids, dtype=data.dtype)
    counts = math_ops.maximum(segment_sum(ones, segment_ids), 1)  # empty rows stay zero
    if combiner == "sqrtn":
        counts = math_ops.sqrt(counts)
    ones_tail = array_ops.fill(array_ops.expand_dims(array_ops.rank(summed) - 1, 0), 1)
    counts = array_ops.reshape(counts, array_ops.concat([array_ops.shape(counts), ones_tail], 0))
    return math_ops.div(summed, counts, name=name)
