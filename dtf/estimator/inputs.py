"""tf.estimator.inputs: input_fns over in-memory numpy arrays.

TF 1.15 feeds numpy_input_fn through a queue and QueueRunner threads; dtf builds the same
stream (rows in order or shuffled, epochs back to back, batches that may cross an epoch
boundary, a short last batch when num_epochs is set) from tf.data, so no thread is needed."""
from __future__ import annotations

import collections

import numpy as np

__all__ = ["numpy_input_fn", "pandas_input_fn"]

_TARGET_KEY = "__target_key__"
_DIRECT_NP_INPUT = "__direct_np_input__"


def _validate_and_convert_features(x):
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items(), key=lambda t: t[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({_DIRECT_NP_INPUT: x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def _unique_target_key(features):
    target_key = _TARGET_KEY
    while target_key in features:
        target_key += "_n"
    return target_key


def batched_rows(columns, batch_size, num_epochs, shuffle, min_after_dequeue, drop_remainder):
    """The next batch (a dict of tensors) of the rows of ``columns`` (name -> array), the
    stream TF's feeding queues give: rows in order or drawn from a buffer of at least
    ``min_after_dequeue`` rows, epochs back to back, batches crossing epoch boundaries."""
    from dtf.data.dataset_ops import Dataset

    dataset = Dataset.from_tensor_slices(dict(columns))
    if shuffle:
        dataset = dataset.shuffle(min_after_dequeue + batch_size)
    dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=drop_remainder)
    return dataset.make_one_shot_iterator().get_next()


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000,
                   num_threads=1):
    """An input_fn returning (features, labels) batches drawn from numpy arrays: x a dict of
    arrays (or one array), y an array, a dict of arrays, or None."""
    if not isinstance(shuffle, bool):
        raise ValueError("shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle}")
    if num_threads != 1 and num_epochs is not None:
        raise NotImplementedError(
            "numpy_input_fn: num_threads > 1 with a finite num_epochs (TF runs num_epochs per "
            "thread) is not supported by dtf; use num_threads=1")

    def input_fn():
        data = _validate_and_convert_features(x)
        feature_keys = list(data.keys())
        if y is None:
            target_keys = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            ordered_y = collections.OrderedDict(sorted(y.items(), key=lambda t: t[0]))
            target_keys = list(ordered_y.keys())
            duplicates = set(feature_keys).intersection(target_keys)
            if duplicates:
                raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: "
                                 f"{duplicates}")
            data.update(ordered_y)
        else:
            target_keys = _unique_target_key(data)
            data[target_keys] = y
        if len({v.shape[0] for v in data.values()}) != 1:
            x_shapes = {k: data[k].shape for k in feature_keys}
            if target_keys is None:
                y_shapes = None
            elif isinstance(target_keys, str):
                y_shapes = y.shape
            else:
                y_shapes = {k: data[k].shape for k in target_keys}
            raise ValueError("Length of tensors in x and y is mismatched. All elements in x and y "
                             f"must have the same length.\nShapes in x: {x_shapes}\nShapes in y: "
                             f"{y_shapes}\n")
        batch = batched_rows(data, batch_size, num_epochs, shuffle,
                             max(int(queue_capacity / 4), 1), drop_remainder=False)
        features = (batch[_DIRECT_NP_INPUT] if isinstance(x, np.ndarray)
                    else {k: batch[k] for k in feature_keys})
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[target_keys]
        return features, {k: batch[k] for k in target_keys}

    return input_fn


from dtf.estimator.pandas_io import pandas_input_fn  # noqa: E402,F401 - tf.estimator.inputs
