"""tf.estimator.inputs.pandas_input_fn: an input_fn over a pandas DataFrame (TF 1.15).

pandas is optional: the function exists without it and raises TF's TypeError when called.
TF feeds the frame's rows (index first, then each column) through a queue; dtf streams the
same rows through tf.data (see ``inputs.batched_rows``), and the index is dropped as TF drops
it."""
from __future__ import annotations

import numpy as np

try:
    import pandas as pd
    HAS_PANDAS = True
except ImportError:  # pandas is not a dependency of dtf
    pd = None
    HAS_PANDAS = False

__all__ = ["pandas_input_fn"]


def _get_unique_target_key(features, target_column_name):
    while target_column_name in features:
        target_column_name += "_n"
    return target_column_name


def _column_values(series):
    # Extension dtypes (pandas' str, nullable ints) become plain numpy arrays; strings as
    # object arrays, which the dataset reads as tf.string, as TF's as_dtype(object) does.
    values = series.to_numpy()
    if values.dtype.kind in "OUS":
        return np.asarray(values, dtype=object)
    return values


def pandas_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                    num_threads=1, target_column="target"):
    """An input_fn giving (features, target) batches of the rows of DataFrame ``x``: features
    a dict by column name, target the rows of Series ``y`` (or a dict when ``y`` is a
    DataFrame); features alone when ``y`` is None."""
    if not HAS_PANDAS:
        raise TypeError("pandas_input_fn should not be called without pandas installed")
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle}")
    if not isinstance(target_column, str):
        raise TypeError("target_column must be a string type")
    if num_threads != 1 and num_epochs is not None:
        raise NotImplementedError(
            "pandas_input_fn: num_threads > 1 with a finite num_epochs (TF runs num_epochs per "
            "thread) is not supported by dtf; use num_threads=1")

    x = x.copy()
    y_columns = None
    if y is not None:
        if target_column in x:
            raise ValueError(f"Cannot use name {target_column} for target column: DataFrame "
                             f"already has a column with that name: {x.columns}")
        if not np.array_equal(x.index, y.index):
            raise ValueError(f"Index for x and y are mismatched.\nIndex for x: {x.index}\n"
                             f"Index for y: {y.index}\n")
        if isinstance(y, pd.DataFrame):
            y_columns = [(column, _get_unique_target_key(x, column)) for column in list(y)]
            target_column = [v for _, v in y_columns]
            x[target_column] = y
        else:
            x[target_column] = y

    if queue_capacity is None:
        queue_capacity = 4 * len(x) if shuffle else len(x)
    min_after_dequeue = max(int(queue_capacity / 4), 1)
    columns = list(x.columns)
    data = {f"c{i}": _column_values(x[c]) for i, c in enumerate(columns)}

    def input_fn():
        from dtf.estimator.inputs import batched_rows

        # TF dequeues whole batches when the stream is endless (dequeue_many) and a short
        # last batch when it ends (dequeue_up_to).
        batch = batched_rows(data, batch_size, num_epochs, shuffle, min_after_dequeue,
                             drop_remainder=num_epochs is None)
        features = {c: batch[f"c{i}"] for i, c in enumerate(columns)}
        if y is None:
            return features
        if isinstance(target_column, list):
            values = [features.pop(column) for column in target_column]
            return features, {k: v for (k, _), v in zip(y_columns, values)}
        return features, features.pop(target_column)

    return input_fn
