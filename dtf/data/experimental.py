"""``tf.data.experimental``: AUTOTUNE and the transformations TF1 code applies with
``Dataset.apply``."""
from __future__ import annotations

from .dataset_ops import AUTOTUNE  # noqa: F401


def unbatch():
    """``dataset.apply(unbatch())``: each element split along its first dimension."""
    return lambda dataset: dataset.unbatch()


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """Shuffles with a new order per pass, repeated ``count`` times."""
    return lambda dataset: dataset.shuffle(buffer_size, seed, True).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """``map`` then ``batch``."""
    return lambda dataset: dataset.map(map_func, num_parallel_calls).batch(batch_size, drop_remainder)


def enumerate_dataset(start=0):
    """``dataset.apply(enumerate_dataset())``: (index, element) pairs."""
    return lambda dataset: dataset.enumerate(start)
