"""The feature columns of TF 1.15's ``tf.feature_column`` (v1 semantics): how each turns raw
input into a dense tensor (``_DenseColumn``) or into sparse ids (``_CategoricalColumn``).

A column is an immutable description; the work happens in ``_transform_feature(builder)``,
called once per column per model through ``builder.get`` (the builder caches, so a column
shared by two consumers is transformed once, as TF's ``_LazyBuilder``). Names, errors and
the variables made (``<name>_embedding/embedding_weights``) follow TF so checkpoints match.
"""
from __future__ import annotations

import collections
import math

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape
from dtf.ops import array_ops, math_ops
from dtf.ops import feature_ops
from dtf.ops.scatter_nd_ops import gather_nd as _gather_nd
from dtf.ops.sparse_ops import SparseTensor

_FP_BUCKETS = (1 << 63) - 1   # string keys are searched by Fingerprint64 mod this (int64)
IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])


class _FeatureColumn:
    _fields = ()

    def __init__(self, **kw):
        for k in self._fields:
            object.__setattr__(self, k, kw[k])

    def __setattr__(self, k, v):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _key(self):
        return tuple(getattr(self, k) if not callable(getattr(self, k)) else id(getattr(self, k))
                     for k in self._fields)

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__[1:]}({args})"

    @property
    def _var_scope_name(self):
        return self.name


class _DenseColumn(_FeatureColumn):
    """A column that gives a dense float tensor of ``_variable_shape`` per example."""


class _CategoricalColumn(_FeatureColumn):
    """A column that gives sparse integer ids in [0, ``_num_buckets``) per example."""


# -- numeric and bucketized ------------------------------------------------------------------
class _NumericColumn(_DenseColumn):
    _fields = ("key", "shape", "default_value", "dtype", "normalizer_fn")

    @property
    def name(self):
        return self.key

    @property
    def _variable_shape(self):
        return TensorShape(self.shape)

    @property
    def _parse_example_spec(self):
        from dtf.io.parsing_ops import FixedLenFeature
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, builder):
        x = builder.get(self.key)
        if isinstance(x, SparseTensor):
            raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. "
                             f"SparseTensor is not supported. key: {self.key}")
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        return math_ops.cast(x, dtypes.float32)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        return builder.get(self)


class _BucketizedColumn(_DenseColumn, _CategoricalColumn):
    _fields = ("source_column", "boundaries")

    @property
    def name(self):
        return f"{self.source_column.name}_bucketized"

    @property
    def _variable_shape(self):
        return TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,))

    @property
    def _num_buckets(self):
        return (len(self.boundaries) + 1) * self.source_column.shape[0]

    _parse_example_spec = property(lambda self: self.source_column._parse_example_spec)

    def _transform_feature(self, builder):
        return feature_ops.bucketize(builder.get(self.source_column), self.boundaries)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        from dtf.ops.slicing_ops import one_hot
        return one_hot(math_ops.cast(builder.get(self), dtypes.int64),
                       depth=len(self.boundaries) + 1, on_value=1., off_value=0.)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        # Bucket b of dimension j of the source is id j * (len(boundaries) + 1) + b.
        x = builder.get(self)
        batch = array_ops.shape(x)[0]
        dim = self.source_column.shape[0]
        i1 = array_ops.reshape(array_ops.tile(array_ops.expand_dims(
            array_ops.range(0, batch), 1), [1, dim]), (-1,))
        i2 = array_ops.tile(array_ops.range(0, dim), [batch])
        ids = array_ops.reshape(x, (-1,)) + (len(self.boundaries) + 1) * i2
        indices = math_ops.cast(array_ops.transpose(array_ops.stack((i1, i2))), dtypes.int64)
        shape = math_ops.cast(array_ops.stack([batch, dim]), dtypes.int64)
        return IdWeightPair(SparseTensor(indices, ids, shape), None)


# -- categorical -----------------------------------------------------------------------------
def to_sparse_input(x, ignore_value=None):
    """A dense [batch, n] input as a SparseTensor without its ignored entries ('' for
    strings, -1 for integers), as TF's ``_to_sparse_input_and_drop_ignore_values``."""
    if isinstance(x, SparseTensor):
        return x
    with _ops.name_scope(None, "to_sparse_input", [x]):
        x = _ops.convert_to_tensor(x)
        if ignore_value is None:
            if x.dtype == dtypes.string:
                ignore_value = ""
            elif x.dtype.is_integer:
                ignore_value = -1
            else:
                ignore_value = x.dtype.as_numpy_dtype()
        ignore = _ops.convert_to_tensor(ignore_value, dtype=x.dtype, name="ignore_value")
        indices = math_ops.where(math_ops.not_equal(x, ignore), name="indices")
        return SparseTensor(indices, _gather_nd(x, indices, name="values"),
                            array_ops.shape(x, out_type=dtypes.int64, name="dense_shape"))


class _IdentityCategoricalColumn(_CategoricalColumn):
    _fields = ("key", "num_buckets", "default_value")

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: self.num_buckets)
    _parse_example_spec = property(lambda self: _var_len(self.key, dtypes.int64))

    def _transform_feature(self, builder):
        sp = to_sparse_input(builder.get(self.key))
        if not sp.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: {sp.dtype}")
        values = math_ops.cast(sp.values, dtypes.int64, name="values")
        nb = _ops.convert_to_tensor(self.num_buckets, dtype=dtypes.int64, name="num_buckets")
        zero = _ops.convert_to_tensor(0, dtype=dtypes.int64, name="zero")
        if self.default_value is None:
            from dtf.ops import check_ops
            from dtf.ops.control_flow_ops import with_dependencies
            checks = [check_ops.assert_less(values, nb, data=(values, nb),
                                            name="assert_less_than_num_buckets"),
                      check_ops.assert_greater_equal(values, zero, data=(values,),
                                                     name="assert_greater_or_equal_0")]
            values = with_dependencies(checks, values)
        else:
            bad = math_ops.logical_or(math_ops.less(values, zero),
                                      math_ops.greater_equal(values, nb))
            values = math_ops.where(bad, array_ops.fill(array_ops.shape(values),
                                                         _ops.convert_to_tensor(
                                                             self.default_value, dtypes.int64)),
                                     values)
        return SparseTensor(sp.indices, values, sp.dense_shape)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return IdWeightPair(builder.get(self), None)


class _HashedCategoricalColumn(_CategoricalColumn):
    _fields = ("key", "hash_bucket_size", "dtype")

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: self.hash_bucket_size)
    _parse_example_spec = property(lambda self: _var_len(self.key, self.dtype))

    def _transform_feature(self, builder):
        sp = to_sparse_input(builder.get(self.key))
        if not (sp.dtype == dtypes.string or sp.dtype.is_integer):
            raise ValueError(f"input tensors dtype must be string or integer. dtype: "
                             f"{sp.dtype}, column_name: {self.key}")
        _check_same_kind(self.dtype, sp.dtype, self.key)
        values = sp.values if sp.dtype == dtypes.string else feature_ops.as_string_int(sp.values)
        ids = feature_ops.string_to_hash_bucket_fast(values, self.hash_bucket_size, name="lookup")
        return SparseTensor(sp.indices, ids, sp.dense_shape)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return IdWeightPair(builder.get(self), None)


class _VocabularyListCategoricalColumn(_CategoricalColumn):
    _fields = ("key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets")

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)
    _parse_example_spec = property(lambda self: _var_len(self.key, self.dtype))

    def _transform_feature(self, builder):
        sp = to_sparse_input(builder.get(self.key))
        if self.dtype.is_integer != sp.dtype.is_integer:
            raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: "
                             f"{self.key}, column dtype: {self.dtype}, tensor dtype: {sp.dtype}")
        values = sp.values if sp.dtype == dtypes.string else math_ops.cast(sp.values, dtypes.int64)
        with _ops.name_scope(None, f"{self.key}_lookup", [values]):
            ids = self._lookup(values)
        return SparseTensor(sp.indices, ids, sp.dense_shape)

    def _lookup(self, values):
        return vocabulary_lookup(values, self.vocabulary_list, self.num_oov_buckets,
                                 self.default_value, self.key)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return IdWeightPair(builder.get(self), None)


def vocabulary_lookup(values, vocabulary_list, num_oov_buckets, default_value, key):
    """The index in ``vocabulary_list`` of each of ``values`` (int64 or string); values not
    in it get a hashed bucket after the vocabulary, or ``default_value``."""
    # TF looks the keys up in an initialized hash table (index_table_from_tensor). Here
    # a binary search over the sorted vocabulary (int64 keys, or the strings' 63-bit
    # fingerprints) finds the candidate and an exact comparison confirms it: the same
    # ids, no table state, and O(batch log vocabulary) work rather than a batch x
    # vocabulary comparison.
    import numpy as np
    from dtf.ops.array_extra_ops import searchsorted
    from dtf.ops.slicing_ops import gather

    vocab = list(vocabulary_list)
    if values.dtype == dtypes.string:
        from dtf.framework.farmhash import fingerprint64
        keys = [fingerprint64(v.encode()) % _FP_BUCKETS for v in vocab]
        if len(set(keys)) != len(keys):   # two words, one 63-bit fingerprint: never seen
            raise ValueError(f"vocabulary of column {key}: two words share a "
                             "fingerprint; dtf cannot look them up apart")
        probe = feature_ops.string_to_hash_bucket_fast(values, _FP_BUCKETS)
    else:
        keys = vocab
        probe = values
    order = np.argsort(np.asarray(keys, dtype=np.int64), kind="stable")
    sorted_keys = _ops.convert_to_tensor(np.asarray(keys, np.int64)[order], name="keys")
    sorted_vocab = _ops.convert_to_tensor(np.asarray(vocab, dtype=object if values.dtype ==
                                                     dtypes.string else np.int64)[order],
                                          dtype=values.dtype, name="vocabulary")
    pos = math_ops.minimum(searchsorted(sorted_keys, probe, out_type=dtypes.int64),
                           len(vocab) - 1)
    found = math_ops.equal(gather(sorted_vocab, pos), values)
    index = gather(_ops.convert_to_tensor(order.astype(np.int64), name="ids"), pos)
    if num_oov_buckets:
        text = values if values.dtype == dtypes.string else feature_ops.as_string_int(values)
        missing = feature_ops.string_to_hash_bucket_fast(text, num_oov_buckets) + len(
            vocabulary_list)
    else:
        missing = array_ops.fill(array_ops.shape(values),
                                 _ops.convert_to_tensor(default_value, dtypes.int64))
    return math_ops.where(found, index, missing, name="hash_table_Lookup")


def _var_len(key, dtype):
    from dtf.io.parsing_ops import VarLenFeature
    return {key: VarLenFeature(dtype)}


def _check_same_kind(column_dtype, input_dtype, key):
    if (column_dtype == dtypes.string) != (input_dtype == dtypes.string):
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, "
                         f"column dtype: {column_dtype}, tensor dtype: {input_dtype}")


class _CrossedColumn(_CategoricalColumn):
    _fields = ("keys", "hash_bucket_size", "hash_key")

    @property
    def name(self):
        names = [k if isinstance(k, str) else k.name for k in _leaf_keys(self)]
        return "_X_".join(sorted(names))

    _num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def _parse_example_spec(self):
        spec = {}
        for key in self.keys:
            spec.update(key._parse_example_spec if isinstance(key, _FeatureColumn)
                        else _var_len(key, dtypes.string))
        return spec

    def _transform_feature(self, builder):
        inputs = []
        for key in _leaf_keys(self):
            if isinstance(key, str):
                inputs.append(builder.get(key))
            else:
                inputs.append(key._get_sparse_tensors(builder).id_tensor)
        return feature_ops.sparse_cross_hashed(inputs, num_buckets=self.hash_bucket_size,
                                               hash_key=self.hash_key)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return IdWeightPair(builder.get(self), None)


def _leaf_keys(crossed):
    out = []
    for k in crossed.keys:
        out.extend(_leaf_keys(k) if isinstance(k, _CrossedColumn) else [k])
    return out


# -- dense views of categorical columns ------------------------------------------------------
class _IndicatorColumn(_DenseColumn):
    _fields = ("categorical_column",)

    name = property(lambda self: f"{self.categorical_column.name}_indicator")
    _variable_shape = property(lambda self: TensorShape([self.categorical_column._num_buckets]))
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)

    def _transform_feature(self, builder):
        from dtf.ops.slicing_ops import one_hot
        from dtf.ops.sparse_ops import sparse_tensor_to_dense
        from dtf.ops.reduction_ops import reduce_sum
        pair = self.categorical_column._get_sparse_tensors(builder)
        dense = sparse_tensor_to_dense(pair.id_tensor, default_value=-1)
        onehot = one_hot(dense, depth=self.categorical_column._num_buckets, on_value=1.0,
                         off_value=0.0)
        if pair.weight_tensor is not None:
            # A weighted column gives each id's weight in its slot (TF's sparse_merge).
            weights = sparse_tensor_to_dense(pair.weight_tensor, default_value=0.0)
            onehot = onehot * array_ops.expand_dims(math_ops.cast(weights, dtypes.float32), -1)
        return reduce_sum(onehot, axis=[-2])   # an id given twice counts twice, as in TF

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        return builder.get(self)


class _EmbeddingColumn(_DenseColumn):
    _fields = ("categorical_column", "dimension", "combiner", "initializer", "trainable")

    name = property(lambda self: f"{self.categorical_column.name}_embedding")
    _variable_shape = property(lambda self: TensorShape([self.dimension]))
    _parse_example_spec = property(lambda self: self.categorical_column._parse_example_spec)

    def _transform_feature(self, builder):
        return self.categorical_column._get_sparse_tensors(builder)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        from dtf.ops.variable_scope import get_variable
        from dtf.feature_column.lookup import add_to_collections, safe_embedding_lookup_sparse
        pair = builder.get(self)
        weights = get_variable("embedding_weights",
                               shape=(self.categorical_column._num_buckets, self.dimension),
                               dtype=dtypes.float32, initializer=self.initializer,
                               trainable=bool(self.trainable and (trainable is not False)))
        add_to_collections(weights, weight_collections)
        return safe_embedding_lookup_sparse(weights, pair.id_tensor, pair.weight_tensor,
                                            combiner=self.combiner, name=f"{self.name}_weights")


def default_embedding_initializer(dimension):
    from dtf.ops.init_ops import truncated_normal_initializer
    return truncated_normal_initializer(mean=0.0, stddev=1 / math.sqrt(dimension))
