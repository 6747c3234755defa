"""``input_layer`` and ``linear_model``: feature columns turned into one dense tensor, or
into a linear model's logits, with TF 1.15's variable scopes and names
(``input_layer/<col>_embedding/embedding_weights``, ``linear_model/<col>/weights``,
``linear_model/bias_weights``); columns are taken in order of name, as TF does."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import array_ops, math_ops
from dtf.ops.linalg_ops import matmul
from dtf.ops.sparse_ops import SparseTensor
from .columns import _CategoricalColumn, _DenseColumn, _FeatureColumn
from .lookup import add_to_collections, safe_embedding_lookup_sparse


class LazyBuilder:
    """Transforms each column (or raw feature key) once per model and caches the result."""

    def __init__(self, features):
        self._features = dict(features)
        self._cache = {}

    def get(self, key):
        if key in self._cache:
            return self._cache[key]
        if isinstance(key, str):
            value = self._raw(key)
        elif isinstance(key, _FeatureColumn):
            value = key._transform_feature(self)
            if value is None:
                raise ValueError(f"Column {key.name} is not supported.")
        else:
            raise TypeError(f"key must be a _FeatureColumn or a string, got {key!r}")
        self._cache[key] = value
        return value

    def _raw(self, key):
        if key not in self._features:
            raise ValueError(f"Feature {key} is not in features dictionary.")
        x = self._features[key]
        if isinstance(x, SparseTensor):
            if x.shape.ndims == 1:
                raise ValueError(f"Feature (key: {key}) is a rank-1 SparseTensor; dtf takes "
                                 "sparse features of rank 2 or more")
            return x
        x = _ops.convert_to_tensor(x)
        rank = x.shape.ndims
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {x}")
        return array_ops.expand_dims(x, -1) if rank == 1 else x


def _normalize(feature_columns, kind, what):
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    feature_columns = list(feature_columns or [])
    if not feature_columns:
        raise ValueError("Expected feature_columns to be iterable, found dict." if isinstance(
            feature_columns, dict) else "feature_columns must not be empty.")
    for c in feature_columns:
        if not isinstance(c, kind):
            raise ValueError(f"Items of feature_columns must be a {what}. Given: {c}")
    names = {}
    for c in feature_columns:
        if c.name in names:
            raise ValueError(f"Duplicate feature column name found for columns: {names[c.name]} "
                             f"and {c}. This usually means that these columns refer to same "
                             "base feature. Either one must be discarded or a duplicated but "
                             "renamed item must be inserted in features dict.")
        names[c.name] = c
    return sorted(feature_columns, key=lambda c: c.name)


def _flat(tensor, num_elements):
    batch = array_ops.shape(tensor)[0]
    return array_ops.reshape(tensor, array_ops.stack([batch, num_elements]))


def _collect_vars(before, cols_to_vars, column):
    if cols_to_vars is not None:
        cols_to_vars[column] = [v for v in _ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES)
                                if v not in before]


def input_layer(features, feature_columns, weight_collections=None, trainable=True,
                cols_to_vars=None, cols_to_output_tensors=None):
    """A [batch, sum of the columns' sizes] float tensor of ``feature_columns`` (dense
    columns: numeric, bucketized, embedding, indicator) applied to ``features``."""
    from dtf.ops.variable_scope import variable_scope

    columns = _normalize(feature_columns, _DenseColumn,
                         "_DenseColumn. You can wrap a categorical column with an "
                         "embedding_column or indicator_column")
    builder = LazyBuilder(features)
    outs = []
    with variable_scope(None, default_name="input_layer", values=list(features.values())):
        for column in columns:
            with variable_scope(None, default_name=column._var_scope_name):
                before = set(_ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES))
                tensor = column._get_dense_tensor(builder, weight_collections=weight_collections,
                                                  trainable=trainable)
                _collect_vars(before, cols_to_vars, column)
                out = _flat(tensor, column._variable_shape.num_elements())
                outs.append(out)
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[column] = out
        _check_batch_sizes(columns, outs)
        return array_ops.concat(outs, 1)


def _check_batch_sizes(columns, tensors):
    seen = None
    for c, t in zip(columns, tensors):
        b = t.shape.dims[0] if t.shape.ndims else None
        b = None if b is None else getattr(b, "value", b)
        if b is None:
            continue
        if seen is None:
            seen = (c, b)
        elif seen[1] != b:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. Batch "
                             f"size of columns ({seen[0].name}, {c.name}): ({seen[1]}, {b})")


def linear_model(features, feature_columns, units=1, sparse_combiner="sum",
                 weight_collections=None, trainable=True, cols_to_vars=None):
    """A linear model's [batch, units] output: each column's weighted sum plus
    ``bias_weights``. Categorical columns look their weights up (combined by
    ``sparse_combiner``); dense ones multiply theirs."""
    from dtf.ops.nn_ops import bias_add
    from dtf.ops.variable_scope import get_variable, variable_scope
    from dtf.ops.init_ops import zeros_initializer

    if sparse_combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"sparse_combiner must be one of 'mean', 'sqrtn' or 'sum', got "
                         f"{sparse_combiner!r}")
    columns = _normalize(feature_columns, (_DenseColumn, _CategoricalColumn),
                         "_FeatureColumn (a _DenseColumn or _CategoricalColumn)")
    builder = LazyBuilder(features)
    sums = []
    with variable_scope(None, default_name="linear_model", values=list(features.values())):
        for column in columns:
            with variable_scope(None, default_name=column._var_scope_name):
                before = set(_ops.get_collection(_ops.GraphKeys.GLOBAL_VARIABLES))
                if isinstance(column, _CategoricalColumn):
                    pair = column._get_sparse_tensors(builder, weight_collections, trainable)
                    w = get_variable("weights", shape=(column._num_buckets, units),
                                     dtype=dtypes.float32, initializer=zeros_initializer(),
                                     trainable=trainable)
                    add_to_collections(w, weight_collections)
                    sums.append(safe_embedding_lookup_sparse(w, pair.id_tensor, pair.weight_tensor,
                                                             combiner=sparse_combiner,
                                                             name="weighted_sum"))
                else:
                    n = column._variable_shape.num_elements()
                    tensor = _flat(column._get_dense_tensor(builder, weight_collections,
                                                            trainable), n)
                    w = get_variable("weights", shape=(n, units), dtype=dtypes.float32,
                                     initializer=zeros_initializer(), trainable=trainable)
                    add_to_collections(w, weight_collections)
                    sums.append(matmul(tensor, w, name="weighted_sum"))
                _collect_vars(before, cols_to_vars, column)
        _check_batch_sizes(columns, sums)
        no_bias = math_ops.add_n(sums, name="weighted_sum_no_bias")
        bias = get_variable("bias_weights", shape=(units,), dtype=dtypes.float32,
                            initializer=zeros_initializer(), trainable=trainable)
        add_to_collections(bias, weight_collections)
        if cols_to_vars is not None:
            cols_to_vars["bias"] = [bias]
        return bias_add(no_bias, bias, name="weighted_sum")
