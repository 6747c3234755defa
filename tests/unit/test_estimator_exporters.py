"""tf.estimator.BestExporter (TF 1.15): exports when an evaluation beats the best one so far,
the best first read back from the eval event files."""
import os

import numpy as np
import pytest

import dtf as tf

fc = tf.feature_column


def regressor(model_dir, steps_per_checkpoint=10):
    return tf.estimator.LinearRegressor(
        [fc.numeric_column("x", shape=(2,))],
        config=tf.estimator.RunConfig(model_dir=str(model_dir),
                                      save_checkpoints_steps=steps_per_checkpoint))


def data():
    rng = np.random.RandomState(1)
    x = rng.randn(64, 2).astype(np.float32)
    return x, (x @ np.array([1.0, -1.0], np.float32)).astype(np.float32)


def receiver_fn():
    with tf.Graph().as_default():
        return tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, 2])})


def exports(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_best_exporter_exports_only_better_evaluations(tmp_path):
    x, y = data()
    est = regressor(tmp_path)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=None,
                                                 shuffle=False), steps=10)
    ckpt = est.latest_checkpoint()
    best = tf.estimator.BestExporter(serving_input_receiver_fn=receiver_fn(), exports_to_keep=2)
    assert best.name == "best_exporter"
    path = str(tmp_path / "export" / "best_exporter")
    # no eval event files yet: the first result is the best so far, and exported
    first = best.export(est, path, ckpt, {"loss": 1.0, "global_step": 10}, False)
    assert isinstance(first, bytes) and os.path.isdir(first)
    assert best.export(est, path, ckpt, {"loss": 1.0, "global_step": 10}, False) is None
    assert best.export(est, path, ckpt, {"loss": 2.0, "global_step": 10}, True) is None
    assert best.export(est, path, ckpt, {"loss": 0.5, "global_step": 10}, False)
    assert best.export(est, path, ckpt, {"loss": 0.25, "global_step": 10}, False)
    assert len(exports(path)) == 2   # exports_to_keep

    # A new exporter (a restarted evaluator) reads the best loss back from eval/ events.
    metrics = est.evaluate(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False))
    again = tf.estimator.BestExporter(name="again", serving_input_receiver_fn=receiver_fn())
    path2 = str(tmp_path / "export" / "again")
    worse = dict(metrics, loss=metrics["loss"] + 1.0)
    assert again.export(est, path2, ckpt, worse, False) is None
    better = dict(metrics, loss=metrics["loss"] - 1.0)
    assert again.export(est, path2, ckpt, better, False)
    # without an event file pattern nothing is read back: the first result is exported
    fresh = tf.estimator.BestExporter(name="fresh", serving_input_receiver_fn=receiver_fn(),
                                      event_file_pattern=None)
    assert fresh.export(est, str(tmp_path / "export" / "fresh"), ckpt, worse, False)


def test_best_exporter_in_train_and_evaluate(tmp_path):
    x, y = data()
    est = regressor(tmp_path)
    calls = []

    def larger_step(best_eval_result, current_eval_result):
        calls.append((dict(best_eval_result), dict(current_eval_result)))
        return current_eval_result.get("global_step", 0) > best_eval_result.get(
            "global_step", 0)

    by_loss = tf.estimator.BestExporter("by_loss", receiver_fn(), exports_to_keep=None)
    by_step = tf.estimator.BestExporter("by_step", receiver_fn(), compare_fn=larger_step,
                                        exports_to_keep=None)
    metrics, results = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(tf.estimator.inputs.numpy_input_fn(
            {"x": x}, y, batch_size=16, num_epochs=None, shuffle=False), max_steps=30),
        tf.estimator.EvalSpec(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False),
                              steps=None, throttle_secs=0, exporters=[by_loss, by_step]))
    assert metrics["global_step"] == 30 and all(isinstance(r, bytes) for r in results)
    # Evaluations at steps 10, 20, 30 with falling losses. The first evaluation's summary
    # is in eval/ before the exporters run and is read back as the best: with the default
    # compare_fn (strictly smaller loss) it is not exported, as in TF; the two after are.
    assert len(exports(tmp_path / "export" / "by_loss")) == 2
    # Event files hold no global_step (eval summaries leave it out), so every live
    # evaluation beats the one read back by step.
    assert len(exports(tmp_path / "export" / "by_step")) == 3
    assert calls and all("loss" in b for b, _ in calls)


def test_best_exporter_argument_errors():
    with pytest.raises(ValueError, match="`compare_fn` must not be None"):
        tf.estimator.BestExporter(compare_fn=None)
    with pytest.raises(ValueError, match="must include best_eval_result argument"):
        tf.estimator.BestExporter(compare_fn=lambda current_eval_result: True)
    with pytest.raises(ValueError, match="must include current_eval_result argument"):
        tf.estimator.BestExporter(compare_fn=lambda best_eval_result: True)
    with pytest.raises(ValueError, match=r"has following not expected args: \['other'\]"):
        tf.estimator.BestExporter(
            compare_fn=lambda best_eval_result, current_eval_result, other: True)
    with pytest.raises(ValueError, match="must be a positive number"):
        tf.estimator.BestExporter(exports_to_keep=0)
    with pytest.raises(ValueError, match="`name` must be a non-empty string"):
        tf.estimator.BestExporter(name="")
    from dtf.estimator.exporter import _loss_smaller
    with pytest.raises(ValueError, match="best_eval_result cannot be empty or no loss"):
        _loss_smaller({"auc": 1.0}, {"loss": 1.0})
    with pytest.raises(ValueError, match="current_eval_result cannot be empty"):
        _loss_smaller({"loss": 1.0}, {})
    assert _loss_smaller({"loss": 1.0}, {"loss": 0.5}) and not _loss_smaller(
        {"loss": 1.0}, {"loss": 1.0})
