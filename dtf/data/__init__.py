"""``tf.data``: input pipelines built in the graph, run by iterators on the task their op
is placed on."""
from __future__ import annotations

from . import experimental  # noqa: F401
from .dataset_ops import Dataset  # noqa: F401
from .iterator_ops import Iterator, make_initializable_iterator, make_one_shot_iterator  # noqa: F401
from .readers import FixedLengthRecordDataset, TFRecordDataset, TextLineDataset  # noqa: F401


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes
