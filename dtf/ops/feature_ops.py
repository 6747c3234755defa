"""The kernels under tf.feature_column: StringToHashBucketFast, AsString (integers), Bucketize
and the hashed SparseCross, with TF's op names and attributes so a GraphDef or SavedModel
reads the same in TF. Their numpy definitions are in dtf/kernels/reference/feature.py."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .common import convert

__all__ = ["string_to_hash_bucket_fast"]

# crossed_column's default hash_key (sparse_ops._DEFAULT_HASH_KEY in TF).
DEFAULT_HASH_KEY = 0xDECAFCAFFE


@register_op("StringToHashBucketFast")
def _hash_infer(inputs, attrs):
    return [(dtypes.int64, inputs[0].shape)]


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002 - TF's name
    """Each string's FarmHash Fingerprint64 mod ``num_buckets`` (TF's fast string hash)."""
    if int(num_buckets) < 1:
        raise ValueError(f"string_to_hash_bucket_fast: num_buckets must be >= 1, got {num_buckets}")
    with _ops.name_scope(name, "StringToHashBucketFast", [input]) as scope:
        x = convert(input, "input", dtype=dtypes.string)
        return _ops.make_tensor("StringToHashBucketFast", [x], {"num_buckets": int(num_buckets)},
                                name=scope)


@register_op("AsString")
def _as_string_infer(inputs, attrs):
    return [(dtypes.string, inputs[0].shape)]


def as_string_int(x, name=None):
    """Decimal text of an integer tensor (TF's AsString with its default attributes); the
    hashed and vocabulary columns hash integer ids through it, as TF does."""
    with _ops.name_scope(name, "AsString", [x]) as scope:
        x = convert(x, "input")
        if not x.dtype.is_integer:
            raise TypeError(f"as_string: dtf converts integer tensors only, got {x.dtype.name}")
        return _ops.make_tensor("AsString", [x], {"T": x.dtype, "precision": -1,
                                                  "scientific": False, "shortest": False,
                                                  "width": -1, "fill": ""}, name=scope)


@register_op("Bucketize")
def _bucketize_infer(inputs, attrs):
    return [(dtypes.int32, inputs[0].shape)]


def bucketize(input, boundaries, name=None):  # noqa: A002
    """The bucket of each value: the number of ``boundaries`` <= it (TF's math_ops._bucketize)."""
    boundaries = [float(b) for b in boundaries]
    if boundaries != sorted(boundaries):
        raise ValueError(f"bucketize: boundaries must be sorted, got {boundaries}")
    with _ops.name_scope(name, "Bucketize", [input]) as scope:
        x = convert(input, "input")
        return _ops.make_tensor("Bucketize", [x], {"T": x.dtype, "boundaries": boundaries},
                                name=scope)


@register_op("SparseCross")
def _cross_infer(inputs, attrs):
    return [(dtypes.int64, TensorShape([None, 2])), (attrs["out_type"], unknown_shape(1)),
            (dtypes.int64, TensorShape([2]))]


def sparse_cross_hashed(inputs, num_buckets=0, hash_key=None, name=None):
    """The hashed crosses of ``inputs`` (SparseTensors or dense [batch, n] tensors) as a
    SparseTensor of int64 ids: per row, every combination of one value from each input,
    fingerprinted together (FingerprintCat64, seeded by ``hash_key``) mod ``num_buckets``
    (mod 2**63-1 when 0). As TF, the sparse inputs come first, then the dense ones."""
    from .sparse_ops import SparseTensor

    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("sparse_cross_hashed: inputs must be a non-empty list")
    sparse = [i for i in inputs if isinstance(i, SparseTensor)]
    dense = [convert(i, "inputs") for i in inputs if not isinstance(i, SparseTensor)]
    with _ops.name_scope(name, "SparseCross", []) as scope:
        values = []
        for sp in sparse:
            v = sp.values
            values.append(v if v.dtype == dtypes.string else _cast64(v))
        dense = [d if d.dtype == dtypes.string else _cast64(d) for d in dense]
        internal = dtypes.string
        if any(t.dtype != dtypes.string for t in values + dense):
            internal = dtypes.int64
        op = _ops.make_op(
            "SparseCross", [sp.indices for sp in sparse] + values
            + [sp.dense_shape for sp in sparse] + dense,
            {"N": len(sparse), "hashed_output": True, "num_buckets": int(num_buckets),
             "hash_key": int(DEFAULT_HASH_KEY if hash_key is None else hash_key),
             "sparse_types": [v.dtype for v in values], "dense_types": [d.dtype for d in dense],
             "out_type": dtypes.int64, "internal_type": internal}, name=scope)
        return SparseTensor(op.outputs[0], op.outputs[1], op.outputs[2])


def _cast64(t):
    from .math_ops import cast
    return cast(t, dtypes.int64)


for _op in ("StringToHashBucketFast", "AsString", "Bucketize", "SparseCross"):
    NotDifferentiable(_op)
