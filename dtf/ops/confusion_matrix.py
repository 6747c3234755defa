"""tf.confusion_matrix (also tf.math.confusion_matrix): counts of (label, prediction)
pairs, a segment sum over the cell each pair falls in."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from . import array_ops, math_ops
from .reduction_ops import reduce_max
from .weights_broadcast_ops import remove_squeezable_dimensions

__all__ = ["confusion_matrix"]


def class_sums(values, class_ids, num_classes, num_cells, name=None):
    """The sum of ``values`` per cell in [0, num_cells), a pair of class ids making the cell
    ``ids[0] * num_classes + ids[1]``. A class id outside [0, num_classes) sends its value
    to cell ``num_cells``, which UnsortedSegmentSum rejects with InvalidArgumentError at run
    time, where TF's range assertions would."""
    in_range = None
    for ids in class_ids:
        ok = math_ops.logical_and(math_ops.greater_equal(ids, 0),
                                  math_ops.less(ids, num_classes))
        in_range = ok if in_range is None else math_ops.logical_and(in_range, ok)
    cell = class_ids[0]
    for ids in class_ids[1:]:
        cell = cell * num_classes + ids
    out_of_range = array_ops.fill(array_ops.shape(cell), math_ops.cast(num_cells, cell.dtype))
    cell = math_ops.where(in_range, cell, out_of_range, name="cell_or_out_of_range")
    return array_ops.unsorted_segment_sum(values, cell, num_cells, name=name)


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None,
                     weights=None):
    """[num_classes, num_classes] counts (or summed weights): row = label, column =
    prediction. Without ``num_classes``, one more than the largest id seen."""
    with _ops.name_scope(name, "confusion_matrix", (predictions, labels, num_classes, weights)):
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions = math_ops.cast(predictions, dtypes.int64)
        labels = math_ops.cast(labels, dtypes.int64)
        if num_classes is None:
            num_classes = math_ops.maximum(reduce_max(predictions), reduce_max(labels)) + 1
        else:
            num_classes = math_ops.cast(num_classes, dtypes.int64)
        if weights is not None:
            weights = _ops.convert_to_tensor(weights, name="weights")
            predictions.shape.assert_is_compatible_with(weights.shape)
            values = math_ops.cast(weights, dtype)
        else:
            values = array_ops.ones_like(predictions, dtype=dtype)
        counts = class_sums(values, [labels, predictions], num_classes,
                            num_classes * num_classes)
        return array_ops.reshape(counts, array_ops.stack([num_classes, num_classes]))

MATH_API = __all__  # tf.math.confusion_matrix too
