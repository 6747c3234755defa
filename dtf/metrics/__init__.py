"""tf.metrics: streaming metrics as (value, update_op) pairs over local accumulator
variables (LOCAL_VARIABLES and METRIC_VARIABLES)."""
from dtf.metrics.at_k import (  # noqa: F401
    average_precision_at_k, precision_at_k, precision_at_top_k, recall_at_k, recall_at_top_k,
    sparse_average_precision_at_k, sparse_precision_at_k,
)
from dtf.metrics.confusion import mean_iou, mean_per_class_accuracy  # noqa: F401
from dtf.metrics.metrics_impl import (  # noqa: F401
    accuracy, false_negatives, false_positives, mean, mean_absolute_error, mean_cosine_distance,
    mean_relative_error, mean_squared_error, mean_tensor, percentage_below, precision, recall,
    root_mean_squared_error, true_negatives, true_positives,
)
from dtf.metrics.thresholds import (  # noqa: F401
    auc, false_negatives_at_thresholds, false_positives_at_thresholds, precision_at_thresholds,
    recall_at_thresholds, sensitivity_at_specificity, specificity_at_sensitivity,
    true_negatives_at_thresholds, true_positives_at_thresholds,
)
