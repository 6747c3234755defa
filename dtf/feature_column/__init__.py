"""tf.feature_column (TF 1.15, v1 semantics): column constructors with TF's argument checks,
``input_layer`` and ``linear_model``. The columns live in columns.py, the two consumers in
layers.py."""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from .columns import (
    _FeatureColumn, _BucketizedColumn, _CategoricalColumn, _CrossedColumn, _EmbeddingColumn,
    _HashedCategoricalColumn, _IdentityCategoricalColumn, _IndicatorColumn, _NumericColumn,
    _VocabularyListCategoricalColumn, default_embedding_initializer,
)
from .columns_extra import (
    _SharedEmbeddingColumn, _VocabularyFileCategoricalColumn, _WeightedCategoricalColumn,
)
from .layers import input_layer, linear_model  # noqa: F401

__all__ = ["numeric_column", "bucketized_column", "categorical_column_with_identity",
           "categorical_column_with_hash_bucket", "categorical_column_with_vocabulary_list",
           "categorical_column_with_vocabulary_file", "weighted_categorical_column",
           "shared_embedding_columns",
           "crossed_column", "embedding_column", "indicator_column", "input_layer",
           "linear_model", "make_parse_example_spec"]


def _check_key(key):
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Given: {key!r}")


def numeric_column(key, shape=(1,), default_value=None, dtype=_dtypes.float32,
                   normalizer_fn=None):
    """A dense column of ``shape`` numbers per example, read from ``features[key]``."""
    _check_key(key)
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
    if any(d < 1 for d in shape):
        raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    if default_value is not None:
        import numpy as np
        arr = np.asarray(default_value, dtype=dtype.as_numpy_dtype)
        if arr.ndim == 0:
            default_value = (arr.item(),) * int(np.prod(shape))
        elif arr.shape != shape and arr.size != int(np.prod(shape)):
            raise ValueError(f"The shape of default_value must be equal to given shape. "
                             f"default_value: {default_value}, shape: {shape}, key: {key}")
        else:
            default_value = tuple(arr.reshape(-1).tolist())
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    return _NumericColumn(key=key, shape=shape, default_value=default_value, dtype=dtype,
                          normalizer_fn=normalizer_fn)


def bucketized_column(source_column, boundaries):
    """The bucket of each value of a numeric column; dense as one-hots, categorical as ids."""
    if not isinstance(source_column, _NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if not boundaries or not isinstance(boundaries, (list, tuple)) or list(boundaries) != sorted(
            boundaries):
        raise ValueError("boundaries must be a sorted list.")
    return _BucketizedColumn(source_column=source_column,
                             boundaries=tuple(float(b) for b in boundaries))


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """Integer ids in [0, num_buckets) used as they are; others become ``default_value``
    (an error when None)."""
    _check_key(key)
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and (default_value < 0 or default_value >= num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    return _IdentityCategoricalColumn(key=key, num_buckets=int(num_buckets),
                                      default_value=default_value)


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=_dtypes.string):
    """Strings (or integers, as decimal text) hashed into ``hash_bucket_size`` buckets with
    TF's Fingerprint64, so the ids match a TF-trained model's."""
    _check_key(key)
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    dtype = _dtypes.as_dtype(dtype)
    if dtype != _dtypes.string and not dtype.is_integer:
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {key}")
    return _HashedCategoricalColumn(key=key, hash_bucket_size=int(hash_bucket_size),
                                    dtype=dtype)


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1,
                                            num_oov_buckets=0):
    """The index of each value in ``vocabulary_list``; others get ``default_value`` or a
    hashed bucket after the vocabulary (``num_oov_buckets``)."""
    _check_key(key)
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: "
                         f"{key}")
    vocab = tuple(v.decode() if isinstance(v, bytes) else v for v in vocabulary_list)
    if len(set(vocab)) != len(vocab):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: "
                         f"{key}")
    is_str = all(isinstance(v, str) for v in vocab)
    if not is_str and not all(isinstance(v, int) or hasattr(v, "__index__") for v in vocab):
        raise ValueError(f"Invalid vocabulary dtype: {vocabulary_list}, column_name: {key}")
    vocab_dtype = _dtypes.string if is_str else _dtypes.int64
    if dtype is None:
        dtype = vocab_dtype
    dtype = _dtypes.as_dtype(dtype)
    if (dtype == _dtypes.string) != is_str:
        raise ValueError(f"dtype {dtype} and vocabulary dtype {vocab_dtype} do not match, "
                         f"column_name: {key}")
    if num_oov_buckets:
        if default_value != -1:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    if not is_str:
        vocab = tuple(int(v) for v in vocab)
    return _VocabularyListCategoricalColumn(key=key, vocabulary_list=vocab, dtype=dtype,
                                            default_value=int(default_value),
                                            num_oov_buckets=int(num_oov_buckets))


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None,
                                            num_oov_buckets=0, default_value=None,
                                            dtype=_dtypes.string):
    """The line number of each value in ``vocabulary_file`` (one key per line, the first
    ``vocabulary_size`` lines; all when None); others get ``default_value`` or a hashed
    bucket after the vocabulary (``num_oov_buckets``)."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        from dtf import gfile
        if not gfile.Exists(vocabulary_file):
            raise ValueError(f"vocabulary_file in {key} does not exist.")
        with gfile.GFile(vocabulary_file, "rb") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    if num_oov_buckets:
        if default_value is not None:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    dtype = _dtypes.as_dtype(dtype)
    if dtype != _dtypes.string and not dtype.is_integer:
        raise ValueError(f"dtype must be string or integer. dtype: {dtype}, column_name: {key}")
    _check_key(key)
    return _VocabularyFileCategoricalColumn(
        key=key, vocabulary_file=vocabulary_file, vocabulary_size=int(vocabulary_size),
        num_oov_buckets=int(num_oov_buckets or 0),
        default_value=-1 if default_value is None else int(default_value), dtype=dtype)


def weighted_categorical_column(categorical_column, weight_feature_key, dtype=_dtypes.float32):
    """``categorical_column``'s ids, each weighted by the value at the same place in
    ``features[weight_feature_key]`` (zero weights drop their id)."""
    dtype = None if dtype is None else _dtypes.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"categorical_column must be a _CategoricalColumn. Given: "
                         f"{categorical_column}")
    return _WeightedCategoricalColumn(categorical_column=categorical_column,
                                      weight_feature_key=weight_feature_key, dtype=dtype)


def shared_embedding_columns(categorical_columns, dimension, combiner="mean", initializer=None,
                             shared_embedding_collection_name=None, ckpt_to_load_from=None,
                             tensor_name_in_ckpt=None, max_norm=None, trainable=True):
    """Embedding columns, one per categorical column (of one kind and bucket count), that
    look up one shared table, made by the first and found through the collection
    ``shared_embedding_collection_name`` (default: the sorted names joined by ``_``, then
    ``_shared_embedding``)."""
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")
    if ckpt_to_load_from is not None:
        raise ValueError("shared_embedding_columns: dtf does not support ckpt_to_load_from / "
                         "tensor_name_in_ckpt; warm-start the table with WarmStartSettings")
    if max_norm is not None:
        raise ValueError("shared_embedding_columns: dtf does not support max_norm")
    if initializer is not None and not callable(initializer):
        raise ValueError("initializer must be callable if specified.")
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    categorical_columns = list(categorical_columns)
    # Sorted so that the default collection name does not depend on the order given.
    sorted_columns = sorted(categorical_columns, key=lambda c: c.name)
    c0 = sorted_columns[0]
    if not isinstance(c0, _CategoricalColumn):
        raise ValueError(f"All categorical_columns must be subclasses of _CategoricalColumn. "
                         f"Given: {c0}, of type: {type(c0)}")
    num_buckets = c0._num_buckets
    if isinstance(c0, _WeightedCategoricalColumn):
        c0 = c0.categorical_column
    for c in sorted_columns[1:]:
        if isinstance(c, _WeightedCategoricalColumn):
            c = c.categorical_column
        if not isinstance(c, type(c0)):
            raise ValueError(
                "To use shared_embedding_column, all categorical_columns must have the same "
                "type, or be weighted_categorical_column or sequence column of the same type. "
                f"Given column: {c0} of type: {type(c0)} does not match given column: {c} of "
                f"type: {type(c)}")
        if num_buckets != c._num_buckets:
            raise ValueError(
                "To use shared_embedding_column, all categorical_columns must have the same "
                f"number of buckets. Given column: {c0} with buckets: {num_buckets} does  not "
                f"match column: {c} with buckets: {c._num_buckets}")
    if not shared_embedding_collection_name:
        shared_embedding_collection_name = "_".join(c.name for c in sorted_columns)
        shared_embedding_collection_name += "_shared_embedding"
    initializer = initializer or default_embedding_initializer(dimension)
    return [_SharedEmbeddingColumn(categorical_column=c, dimension=int(dimension),
                                   combiner=combiner, initializer=initializer,
                                   shared_embedding_collection_name=(
                                       shared_embedding_collection_name),
                                   trainable=trainable)
            for c in categorical_columns]


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """Every combination of one value per key (feature names or categorical columns), each
    hashed together into ``hash_bucket_size`` buckets (TF's FingerprintCat64)."""
    if not hash_bucket_size or hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be > 1. hash_bucket_size: {hash_bucket_size}")
    if not keys or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1. Given: {keys}")
    for key in keys:
        if not isinstance(key, (str, _CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or "
                             f"categorical column except _HashedCategoricalColumn. Given: {key}")
        if isinstance(key, _HashedCategoricalColumn):
            raise ValueError("categorical_column_with_hash_bucket is not supported for crossing. "
                             "Hashing before crossing will increase probability of collision. "
                             "Instead, use the feature name as a string. Given: {}".format(key))
    return _CrossedColumn(keys=tuple(keys), hash_bucket_size=int(hash_bucket_size),
                          hash_key=hash_key)


def indicator_column(categorical_column):
    """A categorical column as a dense multi-hot vector of its ``num_buckets``."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a _CategoricalColumn. Given: "
                         f"{categorical_column}")
    return _IndicatorColumn(categorical_column=categorical_column)


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None,
                     ckpt_to_load_from=None, tensor_name_in_ckpt=None, max_norm=None,
                     trainable=True):
    """A categorical column as the ``combiner`` of rows of a trained [num_buckets,
    dimension] table (``<name>_embedding/embedding_weights``)."""
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")
    if ckpt_to_load_from is not None:
        raise ValueError("embedding_column: dtf does not support ckpt_to_load_from / "
                         "tensor_name_in_ckpt; warm-start the table with WarmStartSettings")
    if max_norm is not None:
        raise ValueError("embedding_column: dtf does not support max_norm")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: "
                         f"{categorical_column.name}")
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"categorical_column must be a _CategoricalColumn. Given: "
                         f"{categorical_column}")
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    return _EmbeddingColumn(categorical_column=categorical_column, dimension=int(dimension),
                            combiner=combiner,
                            initializer=initializer or default_embedding_initializer(dimension),
                            trainable=trainable)


def make_parse_example_spec(feature_columns):
    """The ``parse_example`` features dict the columns read: FixedLenFeature for numeric
    columns, VarLenFeature for categorical ones (crossed columns: each of their keys)."""
    result = {}
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: "
                             f"{column}")
        for key, value in column._parse_example_spec.items():
            if key in result and value != result[key]:
                raise ValueError(f"feature_columns contain different parse_spec for key {key}. "
                                 f"Given {value} and {result[key]}")
            result[key] = value
    return result
