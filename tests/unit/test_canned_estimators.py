"""Canned estimators (TF 1.15's v1 LinearClassifier/Regressor, DNNClassifier/Regressor,
DNNLinearCombinedClassifier): a step checked against numpy, loss falling on small data, TF's
variable names, eval metric keys and prediction keys."""
import os

import numpy as np
import pytest

import dtf as tf

fc = tf.feature_column
RS = np.random.RandomState(0)
X = RS.randn(64, 2).astype(np.float32)
COLOR = RS.choice(["red", "green", "blue"], 64)
Y_CLASS = ((X[:, 0] - X[:, 1] + (COLOR == "red")) > 0.3).astype(np.int64)
Y_REG = (X @ np.array([1.5, -0.5], np.float32) + 0.25).astype(np.float32)

# Fixed graph seeds: the initial weights and the input order are the same every run, so the
# thresholds below judge one known training run, not a lucky one.
SEEDED = tf.estimator.RunConfig(tf_random_seed=7)
BINARY_METRICS = {"accuracy", "accuracy_baseline", "auc", "auc_precision_recall", "average_loss",
                  "label/mean", "prediction/mean", "precision", "recall", "loss", "global_step"}


def _cols():
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green", "blue"])
    return [fc.numeric_column("x", shape=(2,)), color]


def _input(y, epochs=None, shuffle=True, batch=16):
    return tf.estimator.inputs.numpy_input_fn({"x": X, "color": COLOR}, y, batch_size=batch,
                                              num_epochs=epochs, shuffle=shuffle)


def test_linear_regressor_one_sgd_step_matches_numpy(tmp_path):
    est = tf.estimator.LinearRegressor([fc.numeric_column("x", shape=(2,))],
                                       model_dir=str(tmp_path),
                                       optimizer=tf.train.GradientDescentOptimizer(0.01))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": X}, Y_REG, batch_size=64, num_epochs=1,
                                                 shuffle=False), steps=1)
    # The v1 default loss reduction is SUM: d/dw sum((y - xw - b)^2) at zero is -2 x'y.
    w = est.get_variable_value("linear/linear_model/x/weights")
    b = est.get_variable_value("linear/linear_model/bias_weights")
    np.testing.assert_allclose(w[:, 0], 0.01 * 2 * X.T @ Y_REG, rtol=1e-5)
    np.testing.assert_allclose(b, [0.01 * 2 * Y_REG.sum()], rtol=1e-5)


def test_linear_classifier_learns_and_reports_tf_metrics(tmp_path):
    est = tf.estimator.LinearClassifier(_cols(), model_dir=str(tmp_path), config=SEEDED)
    est.train(_input(Y_CLASS), steps=200)
    got = est.evaluate(_input(Y_CLASS, 1, False))
    assert set(got) == BINARY_METRICS
    assert got["accuracy"] > 0.85 and got["auc"] > 0.9
    assert got["global_step"] == 200
    names = set(est.get_variable_names())
    assert {"linear/linear_model/x/weights", "linear/linear_model/color/weights",
            "linear/linear_model/bias_weights"} <= names
    pred = next(est.predict(_input(None, 1, False)))
    assert set(pred) == {"logits", "logistic", "probabilities", "class_ids", "classes",
                         "all_class_ids", "all_classes"}
    assert pred["classes"][0] in (b"0", b"1") and pred["probabilities"].shape == (2,)


def test_dnn_classifier_multiclass_loss_falls(tmp_path):
    y = (Y_CLASS + (X[:, 0] > 1)).astype(np.int64)
    cols = [fc.numeric_column("x", shape=(2,)),
            fc.embedding_column(_cols()[1], 2), fc.indicator_column(_cols()[1])]
    est = tf.estimator.DNNClassifier([8, 4], cols, model_dir=str(tmp_path), n_classes=3,
                                     label_vocabulary=["a", "b", "c"], config=SEEDED)
    labels = np.array(["a", "b", "c"])[y]
    first = est.evaluate(_input(labels, 1, False))
    est.train(_input(labels), steps=300)
    last = est.evaluate(_input(labels, 1, False))
    assert set(last) == {"accuracy", "average_loss", "loss", "global_step"}
    assert last["loss"] < first["loss"] and last["accuracy"] > 0.7
    names = set(est.get_variable_names())
    assert {"dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_1/bias", "dnn/logits/kernel",
            "dnn/input_from_feature_columns/input_layer/color_embedding/embedding_weights"} <= names
    pred = next(est.predict(_input(None, 1, False)))
    assert pred["classes"][0] in (b"a", b"b", b"c")
    assert list(pred["all_classes"]) == [b"a", b"b", b"c"]


def test_dnn_regressor_and_combined_classifier_train(tmp_path):
    reg = tf.estimator.DNNRegressor([8], [fc.numeric_column("x", shape=(2,))],
                                    model_dir=str(tmp_path / "reg"), config=SEEDED)
    first = reg.evaluate(_input(Y_REG, 1, False))["average_loss"]
    reg.train(_input(Y_REG), steps=200)
    got = reg.evaluate(_input(Y_REG, 1, False))
    assert set(got) == {"average_loss", "label/mean", "prediction/mean", "loss", "global_step"}
    assert got["average_loss"] < first
    np.testing.assert_allclose(got["label/mean"], Y_REG.mean(), rtol=1e-5)
    wide = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "wd"), linear_feature_columns=_cols(),
        dnn_feature_columns=[fc.numeric_column("x", shape=(2,))], dnn_hidden_units=[4],
        dnn_optimizer=lambda: tf.train.AdagradOptimizer(0.1), config=SEEDED)
    start = wide.evaluate(_input(Y_CLASS, 1, False))["loss"]
    wide.train(_input(Y_CLASS), steps=200)
    end = wide.evaluate(_input(Y_CLASS, 1, False))
    assert end["loss"] < start and end["global_step"] == 200
    names = set(wide.get_variable_names())
    assert "dnn/hiddenlayer_0/kernel" in names and "linear/linear_model/bias_weights" in names


@pytest.mark.parametrize("make, message", [
    (lambda: tf.estimator.DNNClassifier([], [fc.numeric_column("x")]), "hidden_units"),
    (lambda: tf.estimator.LinearClassifier([fc.numeric_column("x")], n_classes=1), "n_classes"),
    (lambda: tf.estimator.LinearClassifier([fc.numeric_column("x")], n_classes=3,
                                           label_vocabulary=["a"]), "label_vocabulary"),
])
def test_constructor_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_unknown_optimizer_name(tmp_path):
    est = tf.estimator.LinearRegressor([fc.numeric_column("x", shape=(2,))],
                                       model_dir=str(tmp_path), optimizer="Nope")
    with pytest.raises(ValueError, match="Unsupported optimizer name: Nope"):
        est.train(tf.estimator.inputs.numpy_input_fn({"x": X}, Y_REG, shuffle=False), steps=1)


def test_weighted_loss_and_training_summaries_match_numpy(tmp_path):
    w = RS.uniform(0.5, 2.0, 64).astype(np.float32)
    est = tf.estimator.LinearRegressor([fc.numeric_column("x", shape=(2,))],
                                       model_dir=str(tmp_path), weight_column="w",
                                       optimizer=tf.train.GradientDescentOptimizer(0.0),
                                       config=tf.estimator.RunConfig(save_summary_steps=1))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": X, "w": w}, Y_REG, batch_size=64,
                                                 num_epochs=1, shuffle=False), steps=1)
    tags = {}
    for f in sorted(os.listdir(tmp_path)):
        if f.startswith("events"):
            for event in tf.train.summary_iterator(str(tmp_path / f)):
                for v in event.summary.value:
                    tags[v.tag] = v.simple_value
    want = float(np.sum(w * Y_REG ** 2))   # weights zero: the prediction is 0
    np.testing.assert_allclose(tags["loss"], want, rtol=1e-5)
    np.testing.assert_allclose(tags["average_loss"], want / w.sum(), rtol=1e-5)
    got = est.evaluate(tf.estimator.inputs.numpy_input_fn({"x": X, "w": w}, Y_REG,
                                                          batch_size=64, shuffle=False))
    np.testing.assert_allclose(got["average_loss"], want / w.sum(), rtol=1e-5)
    np.testing.assert_allclose(got["label/mean"], np.sum(w * Y_REG) / w.sum(), rtol=1e-5)


def test_dnn_writes_tf_hidden_layer_summaries(tmp_path):
    est = tf.estimator.DNNRegressor([3], [fc.numeric_column("x", shape=(2,))],
                                    model_dir=str(tmp_path),
                                    config=tf.estimator.RunConfig(save_summary_steps=1))
    est.train(_input(Y_REG), steps=2)
    tags = set()
    for f in os.listdir(tmp_path):
        if f.startswith("events"):
            for event in tf.train.summary_iterator(str(tmp_path / f)):
                tags |= {v.tag for v in event.summary.value}
    assert {"loss", "average_loss", "dnn/dnn/hiddenlayer_0/fraction_of_zero_values",
            "dnn/dnn/hiddenlayer_0/activation", "dnn/dnn/logits/fraction_of_zero_values",
            "dnn/dnn/logits/activation"} <= tags, sorted(tags)
