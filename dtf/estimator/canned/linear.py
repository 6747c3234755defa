"""LinearClassifier and LinearRegressor (TF 1.15's v1 canned linear estimators): logits from
``linear_model`` under the ``linear`` scope, trained by FTRL at min(0.2, 1/sqrt(number of
feature columns)) unless another optimizer is given."""
from __future__ import annotations

import math

from dtf.estimator.estimator import Estimator
from dtf.estimator.canned.head import make_head
from dtf.estimator.canned.optimizers import get_optimizer_instance

_LEARNING_RATE = 0.2


def linear_learning_rate(num_columns, cap=_LEARNING_RATE):
    return min(cap, 1.0 / math.sqrt(num_columns))


def linear_logits(features, feature_columns, units, sparse_combiner, partitioner=None):
    from dtf.estimator.canned.tf_api import tf
    if partitioner is not None:
        raise ValueError("dtf's canned linear estimators do not take a partitioner")
    with tf.variable_scope("linear", values=list(features.values())):
        return tf.feature_column.linear_model(features, feature_columns, units=units,
                                              sparse_combiner=sparse_combiner)


def _check_features(features):
    if not isinstance(features, dict):
        raise ValueError(f"features should be a dictionary of `Tensor`s. Given type: "
                         f"{type(features)}")


def _linear_model_fn(features, labels, mode, head, feature_columns, optimizer, partitioner,
                     sparse_combiner):
    from dtf.estimator.canned.tf_api import tf
    _check_features(features)
    feature_columns = list(feature_columns)
    logits = linear_logits(features, feature_columns, head.logits_dimension, sparse_combiner,
                           partitioner)
    opt = get_optimizer_instance(optimizer, linear_learning_rate(len(feature_columns)))

    def train_op_fn(loss):
        return opt.minimize(loss, global_step=tf.train.get_global_step())

    return head.create_estimator_spec(features, mode, logits, labels, train_op_fn,
                                      tf.losses.get_regularization_losses())


class _Canned(Estimator):
    def __init__(self, model_fn, model_dir, config, warm_start_from):
        super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                         warm_start_from=warm_start_from)


def _sum():
    from dtf.losses import Reduction
    return Reduction.SUM


class LinearClassifier(_Canned):
    """A linear classifier: ``n_classes`` classes (2: logistic regression on one logit)."""

    def __init__(self, feature_columns, model_dir=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, optimizer="Ftrl", config=None, partitioner=None,
                 warm_start_from=None, loss_reduction=None, sparse_combiner="sum"):
        head = make_head(n_classes, weight_column, label_vocabulary,
                         loss_reduction or _sum())

        def model_fn(features, labels, mode, config):
            return _linear_model_fn(features, labels, mode, head, feature_columns, optimizer,
                                    partitioner, sparse_combiner)

        super().__init__(model_fn, model_dir, config, warm_start_from)


class LinearRegressor(_Canned):
    """A linear regression to ``label_dimension`` targets (squared error)."""

    def __init__(self, feature_columns, model_dir=None, label_dimension=1, weight_column=None,
                 optimizer="Ftrl", config=None, partitioner=None, warm_start_from=None,
                 loss_reduction=None, sparse_combiner="sum"):
        head = make_head(None, weight_column, None, loss_reduction or _sum(), label_dimension)

        def model_fn(features, labels, mode, config):
            return _linear_model_fn(features, labels, mode, head, feature_columns, optimizer,
                                    partitioner, sparse_combiner)

        super().__init__(model_fn, model_dir, config, warm_start_from)
