"""The heads of TF 1.15's canned estimators (v1 ``head.py``): from logits and labels to the
loss, predictions, eval metrics and train op of one EstimatorSpec per mode.

Binary classification uses sigmoid cross entropy on one logit, multi-class sparse softmax
cross entropy, regression the squared error; the training loss is reduced with
``loss_reduction`` (the v1 canned estimators' default is SUM) and the eval metric keys and
prediction keys are TF's, so evaluation dicts and exported signatures read the same."""
from __future__ import annotations

from dtf.estimator.model_fn import EstimatorSpec, ModeKeys
from dtf.framework import dtypes
from dtf.framework import ops as _ops


class PredictionKeys:
    CLASSES = "classes"
    CLASS_IDS = "class_ids"
    ALL_CLASSES = "all_classes"
    ALL_CLASS_IDS = "all_class_ids"
    LOGISTIC = "logistic"
    LOGITS = "logits"
    PREDICTIONS = "predictions"
    PROBABILITIES = "probabilities"


def _tf():
    from dtf.estimator.canned.tf_api import tf
    return tf


def _weights(features, weight_column, logits):
    tf = _tf()
    if weight_column is None:
        return 1.0
    key = weight_column if isinstance(weight_column, str) else weight_column.key
    if key not in features:
        raise ValueError(f"weight_column {key!r} is not in features: {sorted(features)}")
    w = tf.cast(tf.convert_to_tensor(features[key]), tf.float32)
    return tf.reshape(w, [-1, 1])


def _label_ids(labels, vocabulary, n_classes):
    """Labels as int64 [batch, 1] class ids (through ``vocabulary`` when given)."""
    tf = _tf()
    if labels is None:
        raise ValueError("You must provide a labels Tensor. Given: None. Suggested "
                         "troubleshooting steps: Check that your data contain your label "
                         "feature. Check that your input_fn properly parses and returns labels.")
    labels = tf.convert_to_tensor(labels)
    if labels.shape.ndims == 1:
        labels = tf.expand_dims(labels, -1)
    if vocabulary is not None:
        if labels.dtype != tf.string:
            raise ValueError("Labels dtype should be string if there is a vocabulary. Given: "
                             f"{labels.dtype}")
        vocab = tf.constant(list(vocabulary))
        eq = tf.equal(tf.expand_dims(tf.reshape(labels, [-1]), 1), tf.expand_dims(vocab, 0))
        ids = tf.argmax(tf.cast(eq, tf.int32), axis=1)
        check = tf.debugging.assert_equal(tf.reduce_all(tf.reduce_any(eq, axis=1)), True,
                                          message="Labels must be in label_vocabulary")
        with tf.control_dependencies([check]):
            return tf.reshape(tf.identity(ids), [-1, 1])
    if labels.dtype == tf.string:
        raise ValueError("Labels dtype should be integer. Instead got string. Use "
                         "label_vocabulary for string labels.")
    ids = tf.cast(labels, tf.int64)
    checks = [tf.debugging.assert_less(ids, tf.constant(n_classes, tf.int64),
                                       message="Labels must be <= n_classes - 1"),
              tf.debugging.assert_non_negative(ids, message="Labels must >= 0")]
    with tf.control_dependencies(checks):
        return tf.identity(ids)


class _Head:
    def __init__(self, n_classes, weight_column, label_vocabulary, loss_reduction,
                 label_dimension=1):
        from dtf.losses import Reduction
        if loss_reduction not in Reduction.all() or loss_reduction == Reduction.NONE:
            raise ValueError(f"Invalid loss_reduction: {loss_reduction}")
        self.n_classes, self.weight_column = n_classes, weight_column
        self.label_vocabulary, self.loss_reduction = label_vocabulary, loss_reduction
        self.label_dimension = label_dimension

    @property
    def logits_dimension(self):
        if self.n_classes is None:
            return self.label_dimension
        return 1 if self.n_classes == 2 else self.n_classes

    def create_estimator_spec(self, features, mode, logits, labels=None, train_op_fn=None,
                              regularization_losses=None):
        tf = _tf()
        with tf.name_scope("head"):
            logits = tf.reshape(logits, [-1, self.logits_dimension])
            predictions = self._predictions(logits)
            if mode == ModeKeys.PREDICT:
                return EstimatorSpec(mode, predictions=predictions,
                                     export_outputs=self._export_outputs(predictions))
            weights = _weights(features, self.weight_column, logits)
            unreduced, label_values = self._unreduced_loss(logits, labels)
            training_loss = tf.losses.compute_weighted_loss(
                unreduced, weights=weights, reduction=self.loss_reduction, loss_collection=None)
            reg_loss = tf.add_n(list(regularization_losses)) if regularization_losses else None
            loss = training_loss if reg_loss is None else tf.add_n([training_loss, reg_loss])
            if mode == ModeKeys.EVAL:
                with tf.name_scope("metrics"):
                    metrics = self._metrics(predictions, label_values, weights, unreduced)
                    if reg_loss is not None:
                        metrics["regularization_loss"] = tf.metrics.mean(
                            reg_loss, name="regularization_loss")
                return EstimatorSpec(mode, predictions=predictions, loss=loss,
                                     eval_metric_ops=metrics)
            if train_op_fn is None:
                raise ValueError("train_op_fn cannot be None.")
            train_op = train_op_fn(loss)
            # As TF: average_loss only under SUM reduction (backwards compatibility there).
            mean_loss = None
            if self.loss_reduction == tf.losses.Reduction.SUM:
                mean_loss = training_loss / tf.reduce_sum(weights * tf.ones_like(unreduced))
        with tf.name_scope(""):
            tf.summary.scalar("loss", loss)
            if mean_loss is not None:
                tf.summary.scalar("average_loss", mean_loss)
            if reg_loss is not None:
                tf.summary.scalar("regularization_loss", reg_loss)
        return EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op)


_DEFAULT, _CLASSIFY, _REGRESS, _PREDICT = "serving_default", "classification", "regression", \
    "predict"


class _ClassHead(_Head):
    def _classification_output(self, scores):
        # TF's _classification_output: every class name, tiled over the batch.
        tf = _tf()
        from dtf.estimator.export_output import ClassificationOutput
        from dtf.ops.feature_ops import as_string_int
        n = max(self.n_classes, 2)
        names = (tf.constant(list(self.label_vocabulary)) if self.label_vocabulary
                 else as_string_int(tf.range(n)))
        classes = tf.tile(tf.expand_dims(names, 0), [tf.shape(scores)[0], 1])
        return ClassificationOutput(scores=scores, classes=classes)

    def _export_outputs(self, predictions):
        from dtf.estimator.export_output import PredictOutput
        out = self._classification_output(predictions[PredictionKeys.PROBABILITIES])
        return {_DEFAULT: out, _CLASSIFY: out, _PREDICT: PredictOutput(predictions)}

    def _classes(self, class_ids):
        tf = _tf()
        from dtf.ops.feature_ops import as_string_int
        if self.label_vocabulary is None:
            return as_string_int(class_ids, name="str_classes")
        return tf.gather(tf.constant(list(self.label_vocabulary)), class_ids, name="classes")

    def _all(self, logits):
        tf = _tf()
        n = max(self.n_classes, 2)
        ids = tf.tile(tf.expand_dims(tf.range(n), 0), [tf.shape(logits)[0], 1])
        return ids, self._classes(tf.cast(ids, tf.int64))


class BinaryHead(_ClassHead):
    def _export_outputs(self, predictions):
        from dtf.estimator.export_output import RegressionOutput
        outputs = super()._export_outputs(predictions)
        outputs[_REGRESS] = RegressionOutput(value=predictions[PredictionKeys.LOGISTIC])
        return outputs

    def _predictions(self, logits):
        tf = _tf()
        P = PredictionKeys
        logistic = tf.sigmoid(logits, name="logistic")
        two = tf.concat([tf.zeros_like(logits), logits], axis=-1, name="two_class_logits")
        class_ids = tf.expand_dims(tf.argmax(two, axis=-1), -1, name="class_ids")
        all_ids, all_classes = self._all(logits)
        return {P.LOGITS: logits, P.LOGISTIC: logistic,
                P.PROBABILITIES: tf.nn.softmax(two, name="probabilities"),
                P.CLASS_IDS: class_ids, P.CLASSES: self._classes(class_ids),
                P.ALL_CLASS_IDS: all_ids, P.ALL_CLASSES: all_classes}

    def _unreduced_loss(self, logits, labels):
        tf = _tf()
        ids = tf.cast(_label_ids(labels, self.label_vocabulary, 2), tf.float32)
        return tf.nn.sigmoid_cross_entropy_with_logits(labels=ids, logits=logits), ids

    def _metrics(self, predictions, labels, weights, unreduced):
        tf = _tf()
        P = PredictionKeys
        w = None if isinstance(weights, float) else weights
        logistic = predictions[P.LOGISTIC]
        ids = tf.cast(predictions[P.CLASS_IDS], tf.float32)
        label_mean = tf.metrics.mean(labels, weights=w, name="label/mean")
        return {
            "accuracy": tf.metrics.accuracy(labels, ids, weights=w, name="accuracy"),
            "precision": tf.metrics.precision(labels, ids, weights=w, name="precision"),
            "recall": tf.metrics.recall(labels, ids, weights=w, name="recall"),
            "prediction/mean": tf.metrics.mean(logistic, weights=w, name="prediction/mean"),
            "label/mean": label_mean,
            "accuracy_baseline": (tf.maximum(label_mean[0], 1 - label_mean[0]),
                                  tf.maximum(label_mean[1], 1 - label_mean[1])),
            "auc": tf.metrics.auc(labels, logistic, weights=w, curve="ROC", name="auc"),
            "auc_precision_recall": tf.metrics.auc(labels, logistic, weights=w, curve="PR",
                                                   name="auc_precision_recall"),
            "average_loss": tf.metrics.mean(unreduced, weights=w, name="average_loss"),
        }


class MultiClassHead(_ClassHead):
    def _predictions(self, logits):
        tf = _tf()
        P = PredictionKeys
        class_ids = tf.expand_dims(tf.argmax(logits, axis=-1), -1, name="class_ids")
        all_ids, all_classes = self._all(logits)
        return {P.LOGITS: logits, P.PROBABILITIES: tf.nn.softmax(logits, name="probabilities"),
                P.CLASS_IDS: class_ids, P.CLASSES: self._classes(class_ids),
                P.ALL_CLASS_IDS: all_ids, P.ALL_CLASSES: all_classes}

    def _unreduced_loss(self, logits, labels):
        tf = _tf()
        ids = _label_ids(labels, self.label_vocabulary, self.n_classes)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.reshape(ids, [-1]),
                                                              logits=logits)
        return tf.expand_dims(loss, -1), ids

    def _metrics(self, predictions, labels, weights, unreduced):
        tf = _tf()
        w = None if isinstance(weights, float) else weights
        return {"accuracy": tf.metrics.accuracy(labels, predictions[PredictionKeys.CLASS_IDS],
                                                weights=w, name="accuracy"),
                "average_loss": tf.metrics.mean(unreduced, weights=w, name="average_loss")}


class RegressionHead(_Head):
    def _export_outputs(self, predictions):
        from dtf.estimator.export_output import PredictOutput, RegressionOutput
        predict = PredictOutput(predictions)
        if self.logits_dimension != 1:
            return {_DEFAULT: predict, _PREDICT: predict}
        regress = RegressionOutput(value=predictions[PredictionKeys.PREDICTIONS])
        return {_DEFAULT: regress, _REGRESS: regress, _PREDICT: predict}

    def _predictions(self, logits):
        return {PredictionKeys.PREDICTIONS: logits}

    def _unreduced_loss(self, logits, labels):
        tf = _tf()
        if labels is None:
            raise ValueError("You must provide a labels Tensor. Given: None.")
        labels = tf.cast(tf.convert_to_tensor(labels), tf.float32)
        labels = tf.reshape(labels, [-1, self.label_dimension])
        return tf.squared_difference(labels, logits), labels

    def _metrics(self, predictions, labels, weights, unreduced):
        tf = _tf()
        w = None if isinstance(weights, float) else weights
        return {"average_loss": tf.metrics.mean(unreduced, weights=w, name="average_loss"),
                "prediction/mean": tf.metrics.mean(predictions[PredictionKeys.PREDICTIONS],
                                                   weights=w, name="prediction/mean"),
                "label/mean": tf.metrics.mean(labels, weights=w, name="label/mean")}


def make_head(n_classes, weight_column, label_vocabulary, loss_reduction, label_dimension=1):
    if n_classes is None:
        return RegressionHead(None, weight_column, None, loss_reduction, label_dimension)
    if n_classes < 2:
        raise ValueError(f"n_classes must be > 1 for classification: {n_classes}")
    if label_vocabulary is not None:
        if not isinstance(label_vocabulary, (list, tuple)):
            # TF's binary head raises TypeError here, its multi-class head ValueError.
            error = TypeError if n_classes == 2 else ValueError
            raise error(f"label_vocabulary should be a list or a tuple. Given type: "
                        f"{type(label_vocabulary)}")
        if len(label_vocabulary) != n_classes:
            raise ValueError(f"label_vocabulary should have n_classes ({n_classes}) entries, "
                             f"got {len(label_vocabulary)}")
    cls = BinaryHead if n_classes == 2 else MultiClassHead
    return cls(n_classes, weight_column, label_vocabulary, loss_reduction)
