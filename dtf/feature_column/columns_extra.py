"""The columns that share their parts with others (TF 1.15 v1 semantics): a vocabulary read
from a file (the list column's lookup), ids weighted by a second feature, and embedding
columns that share one table (``<collection name>/embedding_weights``)."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import math_ops
from dtf.ops.sparse_ops import SparseTensor
from .columns import (
    IdWeightPair, _CategoricalColumn, _EmbeddingColumn, _var_len, to_sparse_input,
    vocabulary_lookup,
)


def read_vocabulary_file(path, vocabulary_size, dtype, key):
    """The first ``vocabulary_size`` lines of ``path`` (one key per line, as TF's
    TextFileIndex.WHOLE_LINE), as str or int."""
    from dtf import gfile
    with gfile.GFile(path, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()   # the newline ending the last line starts no key
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if len(lines) < vocabulary_size:
        raise ValueError(f"Invalid vocab_size in {path}: expected {vocabulary_size} lines, "
                         f"the file has {len(lines)} (column_name: {key})")
    words = lines[:vocabulary_size]
    if len(set(words)) != len(words):
        raise ValueError(f"Duplicate keys in vocabulary_file {path}, column_name: {key}")
    if dtype == dtypes.string:
        return tuple(words)
    try:
        return tuple(int(w) for w in words)
    except ValueError as e:
        raise ValueError(f"vocabulary_file {path} of integer column {key}: {e}") from None


class _VocabularyFileCategoricalColumn(_CategoricalColumn):
    _fields = ("key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "default_value",
               "dtype")

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: self.vocabulary_size + self.num_oov_buckets)
    _parse_example_spec = property(lambda self: _var_len(self.key, self.dtype))

    def _transform_feature(self, builder):
        sp = to_sparse_input(builder.get(self.key))
        if self.dtype.is_integer != sp.dtype.is_integer:
            raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: "
                             f"{self.key}, column dtype: {self.dtype}, tensor dtype: {sp.dtype}")
        values = sp.values if sp.dtype == dtypes.string else math_ops.cast(sp.values, dtypes.int64)
        # TF reads the file when its table is initialized; dtf when the graph is built.
        vocab = read_vocabulary_file(self.vocabulary_file, self.vocabulary_size, self.dtype,
                                     self.key)
        with _ops.name_scope(None, f"{self.key}_lookup", [values]):
            ids = vocabulary_lookup(values, vocab, self.num_oov_buckets, self.default_value,
                                    self.key)
        return SparseTensor(sp.indices, ids, sp.dense_shape)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return IdWeightPair(builder.get(self), None)


class _WeightedCategoricalColumn(_CategoricalColumn):
    _fields = ("categorical_column", "weight_feature_key", "dtype")

    name = property(lambda self: f"{self.categorical_column.name}_weighted_by_"
                                 f"{self.weight_feature_key}")
    _num_buckets = property(lambda self: self.categorical_column._num_buckets)

    @property
    def _parse_example_spec(self):
        config = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in config:
            raise ValueError(f"Parse config {config[self.weight_feature_key]} already exists "
                             f"for {self.weight_feature_key}.")
        config.update(_var_len(self.weight_feature_key, self.dtype))
        return config

    def _transform_feature(self, builder):
        weights = builder.get(self.weight_feature_key)
        if weights.dtype.base_dtype != self.dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {weights.dtype}.")
        if not isinstance(weights, SparseTensor):
            weights = to_sparse_input(weights, ignore_value=0.0)   # TF drops zero weights
        if not weights.dtype.is_floating:
            weights = SparseTensor(weights.indices, math_ops.cast(weights.values,
                                                                  dtypes.float32),
                                   weights.dense_shape)
        ids = self.categorical_column._get_sparse_tensors(builder).id_tensor
        return IdWeightPair(ids, weights)

    def _get_sparse_tensors(self, builder, weight_collections=None, trainable=None):
        return builder.get(self)


class _SharedEmbeddingColumn(_EmbeddingColumn):
    """An embedding column whose table is shared: its shape, parsing and transform are the
    embedding column's; only where the table comes from differs."""
    _fields = ("categorical_column", "dimension", "combiner", "initializer",
               "shared_embedding_collection_name", "trainable")

    name = property(lambda self: f"{self.categorical_column.name}_shared_embedding")
    _var_scope_name = property(lambda self: self.shared_embedding_collection_name)

    def _get_dense_tensor(self, builder, weight_collections=None, trainable=None):
        from dtf.ops.variable_scope import get_variable
        from dtf.feature_column.lookup import add_to_collections, safe_embedding_lookup_sparse
        pair = builder.get(self)
        shape = (self.categorical_column._num_buckets, self.dimension)
        # The first column of the group makes the table and files it under the collection
        # name; the others find it there, whatever variable scope they are in (as TF).
        shared = _ops.get_collection(self.shared_embedding_collection_name)
        if shared:
            if len(shared) > 1:
                raise ValueError(f"Collection {self.shared_embedding_collection_name} can only "
                                 "contain one variable. Suggested fix A: Choose a unique name "
                                 "for this collection. Suggested fix B: remove all other "
                                 "variables from this collection.")
            weights = shared[0]
            if tuple(weights.shape.as_list()) != shape:
                raise ValueError(f"Shared embedding collection "
                                 f"{self.shared_embedding_collection_name} contains variable "
                                 f"{weights.name} of unexpected shape {weights.shape}. Expected "
                                 f"shape is {list(shape)}. Suggested fix A: Choose a unique name "
                                 "for this collection. Suggested fix B: remove all variables "
                                 "from this collection.")
        else:
            weights = get_variable("embedding_weights", shape=shape, dtype=dtypes.float32,
                                   initializer=self.initializer,
                                   trainable=bool(self.trainable and (trainable is not False)))
            add_to_collections(weights, weight_collections)
            _ops.add_to_collection(self.shared_embedding_collection_name, weights)
        return safe_embedding_lookup_sparse(weights, pair.id_tensor, pair.weight_tensor,
                                            combiner=self.combiner, name=f"{self.name}_weights")
