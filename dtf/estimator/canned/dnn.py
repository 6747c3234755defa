"""DNNClassifier/DNNRegressor and DNNLinearCombinedClassifier/Regressor (TF 1.15's v1 canned
estimators). The DNN's variables are TF's (``dnn/input_from_feature_columns/input_layer/...``,
``dnn/hiddenlayer_<i>/kernel``, ``dnn/logits/kernel``): glorot-uniform kernels, ReLU,
dropout only in training; Adagrad at 0.05 by default (0.001 in the combined model, whose
linear part takes FTRL at min(0.005, 1/sqrt(columns)))."""
from __future__ import annotations

from dtf.estimator.canned.head import make_head
from dtf.estimator.canned.linear import (_Canned, _check_features, _sum, linear_learning_rate,
                                         linear_logits)
from dtf.estimator.canned.optimizers import get_optimizer_instance
from dtf.estimator.model_fn import ModeKeys

_LEARNING_RATE = 0.05
_DNN_LEARNING_RATE = 0.001
_LINEAR_LEARNING_RATE = 0.005


def dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn, dropout,
               batch_norm=False, partitioner=None):
    from dtf.estimator.canned.tf_api import tf
    if batch_norm:
        raise ValueError("dtf's canned DNN estimators do not take batch_norm=True")
    if partitioner is not None:
        raise ValueError("dtf's canned DNN estimators do not take an input_layer_partitioner")
    with tf.variable_scope("dnn", values=list(features.values())):
        with tf.variable_scope("input_from_feature_columns", values=list(features.values())):
            net = tf.feature_column.input_layer(features, list(feature_columns))
        for i, n in enumerate(hidden_units):
            with tf.variable_scope(f"hiddenlayer_{i}", values=(net,)) as scope:
                net = tf.layers.dense(net, n, activation=activation_fn,
                                      kernel_initializer=tf.glorot_uniform_initializer(),
                                      name=scope)
                if dropout is not None and mode == ModeKeys.TRAIN:
                    net = tf.layers.dropout(net, rate=dropout, training=True)
            _add_hidden_layer_summary(net, f"dnn/hiddenlayer_{i}")
        with tf.variable_scope("logits", values=(net,)) as scope:
            logits = tf.layers.dense(net, units, activation=None,
                                     kernel_initializer=tf.glorot_uniform_initializer(),
                                     name=scope)
        _add_hidden_layer_summary(logits, "dnn/logits")
        return logits


def _add_hidden_layer_summary(value, tag):
    # TF's summaries, written under the 'dnn' name scope: tags 'dnn/dnn/hiddenlayer_0/...'.
    from dtf.estimator.canned.tf_api import tf
    tf.summary.scalar(f"{tag}/fraction_of_zero_values", tf.nn.zero_fraction(value))
    tf.summary.histogram(f"{tag}/activation", value)


def _check_hidden(hidden_units):
    if not hidden_units or any(int(n) < 1 for n in hidden_units):
        raise ValueError(f"hidden_units must be a non-empty list of positive sizes, got "
                         f"{hidden_units}")


def _dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns, optimizer,
                  activation_fn, dropout, partitioner, batch_norm):
    from dtf.estimator.canned.tf_api import tf
    _check_features(features)
    logits = dnn_logits(features, mode, head.logits_dimension, hidden_units, feature_columns,
                        activation_fn, dropout, batch_norm, partitioner)
    opt = get_optimizer_instance(optimizer, _LEARNING_RATE)

    def train_op_fn(loss):
        return opt.minimize(loss, global_step=tf.train.get_global_step())

    return head.create_estimator_spec(features, mode, logits, labels, train_op_fn,
                                      tf.losses.get_regularization_losses())


def _relu():
    from dtf.ops.nn_ops import relu
    return relu


class DNNClassifier(_Canned):
    """A feed-forward classifier over ``feature_columns`` (dense columns)."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, n_classes=2,
                 weight_column=None, label_vocabulary=None, optimizer="Adagrad",
                 activation_fn=None, dropout=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False):
        _check_hidden(hidden_units)
        head = make_head(n_classes, weight_column, label_vocabulary, loss_reduction or _sum())
        act = activation_fn or _relu()

        def model_fn(features, labels, mode, config):
            return _dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns,
                                 optimizer, act, dropout, input_layer_partitioner, batch_norm)

        super().__init__(model_fn, model_dir, config, warm_start_from)


class DNNRegressor(_Canned):
    """A feed-forward regression to ``label_dimension`` targets."""

    def __init__(self, hidden_units, feature_columns, model_dir=None, label_dimension=1,
                 weight_column=None, optimizer="Adagrad", activation_fn=None, dropout=None,
                 input_layer_partitioner=None, config=None, warm_start_from=None,
                 loss_reduction=None, batch_norm=False):
        _check_hidden(hidden_units)
        head = make_head(None, weight_column, None, loss_reduction or _sum(), label_dimension)
        act = activation_fn or _relu()

        def model_fn(features, labels, mode, config):
            return _dnn_model_fn(features, labels, mode, head, hidden_units, feature_columns,
                                 optimizer, act, dropout, input_layer_partitioner, batch_norm)

        super().__init__(model_fn, model_dir, config, warm_start_from)


def _combined_model_fn(features, labels, mode, head, linear_columns, linear_optimizer,
                       dnn_columns, dnn_optimizer, hidden_units, activation_fn, dropout,
                       partitioner, batch_norm, sparse_combiner):
    from dtf.estimator.canned.tf_api import tf
    _check_features(features)
    linear_columns, dnn_columns = list(linear_columns or []), list(dnn_columns or [])
    if not linear_columns and not dnn_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    parts = []
    if dnn_columns:
        _check_hidden(hidden_units)
        parts.append(("dnn", dnn_logits(features, mode, head.logits_dimension, hidden_units,
                                        dnn_columns, activation_fn, dropout, batch_norm,
                                        partitioner),
                      get_optimizer_instance(dnn_optimizer, _DNN_LEARNING_RATE)))
    if linear_columns:
        parts.append(("linear", linear_logits(features, linear_columns, head.logits_dimension,
                                              sparse_combiner),
                      get_optimizer_instance(linear_optimizer, linear_learning_rate(
                          len(linear_columns), _LINEAR_LEARNING_RATE))))
    logits = tf.add_n([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]

    def train_op_fn(loss):
        # Each part trains its own variables with its own optimizer; the step counts once.
        ops = [opt.minimize(loss, var_list=tf.get_collection(
            tf.GraphKeys.TRAINABLE_VARIABLES, scope=scope + "/")) for scope, _, opt in parts]
        with tf.control_dependencies([tf.group(*ops)]):
            return tf.assign_add(tf.train.get_global_step(), 1).op

    return head.create_estimator_spec(features, mode, logits, labels, train_op_fn,
                                      tf.losses.get_regularization_losses())


class DNNLinearCombinedClassifier(_Canned):
    """A wide (linear) and deep (DNN) classifier whose logits are summed."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, n_classes=2, weight_column=None,
                 label_vocabulary=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        head = make_head(n_classes, weight_column, label_vocabulary, loss_reduction or _sum())
        model_fn = _combined(head, linear_feature_columns, linear_optimizer,
                             dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                             dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                             batch_norm, linear_sparse_combiner)
        super().__init__(model_fn, model_dir, config, warm_start_from)


class DNNLinearCombinedRegressor(_Canned):
    """A wide and deep regression."""

    def __init__(self, model_dir=None, linear_feature_columns=None, linear_optimizer="Ftrl",
                 dnn_feature_columns=None, dnn_optimizer="Adagrad", dnn_hidden_units=None,
                 dnn_activation_fn=None, dnn_dropout=None, label_dimension=1,
                 weight_column=None, input_layer_partitioner=None, config=None,
                 warm_start_from=None, loss_reduction=None, batch_norm=False,
                 linear_sparse_combiner="sum"):
        head = make_head(None, weight_column, None, loss_reduction or _sum(), label_dimension)
        model_fn = _combined(head, linear_feature_columns, linear_optimizer,
                             dnn_feature_columns, dnn_optimizer, dnn_hidden_units,
                             dnn_activation_fn, dnn_dropout, input_layer_partitioner,
                             batch_norm, linear_sparse_combiner)
        super().__init__(model_fn, model_dir, config, warm_start_from)


def _combined(head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
              dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout,
              input_layer_partitioner, batch_norm, linear_sparse_combiner):
    """The model_fn of both wide-and-deep estimators; only their heads differ."""
    act = dnn_activation_fn or _relu()

    def model_fn(features, labels, mode, config):
        return _combined_model_fn(features, labels, mode, head, linear_feature_columns,
                                  linear_optimizer, dnn_feature_columns, dnn_optimizer,
                                  dnn_hidden_units, act, dnn_dropout, input_layer_partitioner,
                                  batch_norm, linear_sparse_combiner)
    return model_fn
