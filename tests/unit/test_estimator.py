"""tf.estimator: model_fn modes, train/evaluate/predict on a linear model checked against
numpy, resuming from model_dir, steps vs max_steps, EstimatorSpec and RunConfig errors.

TF 2.21 no longer ships tf.estimator, so the expected behaviour here is TF 1.15's
(tensorflow_estimator 1.15), read from its source rather than recorded."""
import json
import os

import numpy as np
import pytest

import dtf as tf

RS = np.random.RandomState(0)
X = RS.randn(64, 3).astype(np.float32)
W_TRUE = np.array([[1.0], [-2.0], [0.5]], np.float32)
Y = (X @ W_TRUE + 0.3).astype(np.float32)
LR = 0.1


def linear_model_fn(features, labels, mode, params):
    w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    pred = tf.matmul(features["x"], w) + b
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"y": pred, "twice": 2 * pred})
    loss = tf.reduce_mean(tf.square(pred - labels))
    train_op = tf.train.GradientDescentOptimizer(params["lr"]).minimize(
        loss, global_step=tf.train.get_global_step())
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op,
        eval_metric_ops={"mae": tf.metrics.mean_absolute_error(labels, pred)})


def full_batch_input_fn():
    return {"x": tf.constant(X)}, tf.constant(Y)


def numpy_gd(steps):
    """Full-batch gradient descent on the mean squared error, as the graph does it."""
    w, b = np.zeros((3, 1), np.float64), np.zeros(1, np.float64)
    for _ in range(steps):
        err = X @ w + b - Y
        w -= LR * (2.0 / len(X)) * X.T @ err
        b -= LR * (2.0 / len(X)) * err.sum(0)
    return w, b


@pytest.fixture(autouse=True)
def no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def make_estimator(tmp_path, **config):
    return tf.estimator.Estimator(linear_model_fn, str(tmp_path / "model"),
                                  config=tf.estimator.RunConfig(**config), params={"lr": LR})


def test_train_evaluate_predict_round_trip_matches_numpy(tmp_path):
    est = make_estimator(tmp_path)
    assert est.latest_checkpoint() is None
    assert est.train(full_batch_input_fn, steps=5) is est
    w, b = numpy_gd(5)
    assert est.latest_checkpoint().endswith("model.ckpt-5")
    assert sorted(est.get_variable_names()) == ["b", "global_step", "w"]
    np.testing.assert_allclose(est.get_variable_value("w"), w, rtol=1e-5)
    np.testing.assert_allclose(est.get_variable_value("b"), b, rtol=1e-5)
    assert est.get_variable_value("global_step") == 5

    # evaluate: 'loss' is the mean of the per-batch losses, metrics stream over all rows
    results = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        {"x": X}, Y, batch_size=16, shuffle=False))
    pred = X @ w + b
    batch_losses = [np.mean((pred[i:i + 16] - Y[i:i + 16]) ** 2) for i in range(0, 64, 16)]
    assert sorted(results) == ["global_step", "loss", "mae"]
    assert results["global_step"] == 5
    np.testing.assert_allclose(results["loss"], np.mean(batch_losses), rtol=1e-5)
    np.testing.assert_allclose(results["mae"], np.mean(np.abs(pred - Y)), rtol=1e-5)

    preds = list(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:5]}, batch_size=2, shuffle=False)))
    assert len(preds) == 5 and sorted(preds[0]) == ["twice", "y"]
    np.testing.assert_allclose(np.stack([p["y"] for p in preds]), pred[:5], rtol=1e-5)

    batches = list(est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": X[:5]}, batch_size=2, shuffle=False), predict_keys=["y"],
        yield_single_examples=False))
    assert [sorted(b_) for b_ in batches] == [["y"]] * 3
    assert [len(b_["y"]) for b_ in batches] == [2, 2, 1]


def test_evaluate_steps_name_and_summaries(tmp_path):
    est = make_estimator(tmp_path)
    est.train(full_batch_input_fn, steps=2)
    w, b = numpy_gd(2)
    results = est.evaluate(tf.estimator.inputs.numpy_input_fn(
        {"x": X}, Y, batch_size=16, num_epochs=None, shuffle=False), steps=2, name="val")
    pred = X @ w + b
    first_two = [np.mean((pred[i:i + 16] - Y[i:i + 16]) ** 2) for i in (0, 16)]
    np.testing.assert_allclose(results["loss"], np.mean(first_two), rtol=1e-5)
    eval_dir = tmp_path / "model" / "eval_val"
    assert est.eval_dir("val") == str(eval_dir)
    tags = {}
    for f in os.listdir(eval_dir):
        for event in tf.train.summary_iterator(str(eval_dir / f)):
            for v in event.summary.value:
                tags[v.tag] = (event.step, v)
    # the scalars, and (as TF) which checkpoint was evaluated, all at its global step
    assert set(tags) == {"loss", "mae", "checkpoint_path"}
    assert {step for step, _ in tags.values()} == {2}
    np.testing.assert_allclose(tags["loss"][1].simple_value, results["loss"], rtol=1e-6)
    assert list(tags["checkpoint_path"][1].tensor.string_val) == [
        est.latest_checkpoint().encode()]


def test_resume_from_model_dir_and_max_steps(tmp_path):
    est = make_estimator(tmp_path)
    est.train(full_batch_input_fn, steps=3)
    # a new Estimator on the same model_dir continues from the checkpoint
    est2 = make_estimator(tmp_path)
    est2.train(full_batch_input_fn, steps=2)
    assert est2.get_variable_value("global_step") == 5
    np.testing.assert_allclose(est2.get_variable_value("w"), numpy_gd(5)[0], rtol=1e-5)
    est2.train(full_batch_input_fn, max_steps=7)  # max_steps is a global step, not a count
    assert est2.get_variable_value("global_step") == 7
    est2.train(full_batch_input_fn, max_steps=6)  # already past: no training at all
    assert est2.get_variable_value("global_step") == 7
    np.testing.assert_allclose(est2.get_variable_value("w"), numpy_gd(7)[0], rtol=1e-5)


def test_train_until_input_ends(tmp_path):
    est = make_estimator(tmp_path)
    est.train(tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=16, num_epochs=2,
                                                 shuffle=False))
    assert est.get_variable_value("global_step") == 8  # 2 epochs of 4 batches


def test_train_with_dataset_input_fn(tmp_path):
    est = make_estimator(tmp_path)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(64).repeat(),
              steps=4)
    np.testing.assert_allclose(est.get_variable_value("w"), numpy_gd(4)[0], rtol=1e-5)


def test_train_argument_errors(tmp_path):
    est = make_estimator(tmp_path)
    with pytest.raises(ValueError, match="Can not provide both steps and max_steps."):
        est.train(full_batch_input_fn, steps=1, max_steps=2)
    with pytest.raises(ValueError, match="Must specify steps > 0, given: 0"):
        est.train(full_batch_input_fn, steps=0)
    with pytest.raises(ValueError, match="Must specify max_steps > 0, given: -1"):
        est.train(full_batch_input_fn, max_steps=-1)
    with pytest.raises(TypeError, match="Hooks must be a SessionRunHook"):
        est.train(full_batch_input_fn, steps=1, hooks=[object()])
    with pytest.raises(ValueError, match="Could not find trained model in model_dir"):
        est.get_variable_value("w")


def test_model_fn_modes_params_and_config(tmp_path):
    seen = []

    def model_fn(features, labels, mode, params, config):
        seen.append((mode, labels is None, params["k"], config.model_dir))
        w = tf.get_variable("w", [], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(features) * w
        if mode == "infer":
            return tf.estimator.EstimatorSpec(mode, predictions=features + w)
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=tf.assign_add(
            tf.train.get_global_step(), 1))

    est = tf.estimator.Estimator(model_fn, str(tmp_path), params={"k": 7})
    est.train(lambda: (tf.constant([1.0, 2.0]), tf.constant([0.0, 0.0])), steps=1)
    est.evaluate(lambda: (tf.constant([1.0, 2.0]), tf.constant([0.0, 0.0])), steps=1)
    out = list(est.predict(lambda: tf.data.Dataset.from_tensor_slices([[1.0, 2.0]])))
    assert [s[0] for s in seen] == ["train", "eval", "infer"]
    assert seen[2][1] and not seen[0][1]  # predict passes no labels
    assert all(s[2] == 7 and s[3] == str(tmp_path) for s in seen)
    np.testing.assert_allclose(out, [1.0, 2.0])  # non-dict predictions, one row at a time


def test_model_fn_signature_checks(tmp_path):
    with pytest.raises(ValueError, match="must include features argument"):
        tf.estimator.Estimator(lambda x, labels: None, str(tmp_path))
    with pytest.raises(ValueError, match="does not include params argument, but params"):
        tf.estimator.Estimator(lambda features: None, str(tmp_path), params={"a": 1})
    with pytest.raises(ValueError, match="has following not expected args: \\['extra'\\]"):
        tf.estimator.Estimator(lambda features, extra: None, str(tmp_path))
    with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
        tf.estimator.Estimator(linear_model_fn, str(tmp_path), config={}, params={})
    with pytest.raises(ValueError, match="are set both in constructor and `RunConfig`"):
        tf.estimator.Estimator(linear_model_fn, str(tmp_path / "a"), params={},
                               config=tf.estimator.RunConfig(model_dir=str(tmp_path / "b")))
    with pytest.raises(ValueError, match="warm_start_from must be a string or a "
                                         "WarmStartSettings"):
        tf.estimator.Estimator(linear_model_fn, str(tmp_path), params={}, warm_start_from=1)
    est = tf.estimator.Estimator(lambda features: None, str(tmp_path))
    with pytest.raises(ValueError, match="model_fn does not take labels, but input_fn returns"):
        est.train(full_batch_input_fn, steps=1)
    est = tf.estimator.Estimator(lambda features, labels: {"not": "a spec"}, str(tmp_path))
    with pytest.raises(ValueError, match="model_fn should return an EstimatorSpec."):
        est.train(full_batch_input_fn, steps=1)


def test_estimator_spec_validation():
    ModeKeys = tf.estimator.ModeKeys
    assert (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT) == ("train", "eval", "infer")
    with tf.Graph().as_default():
        loss = tf.constant(1.0)
        op = tf.no_op()
        with pytest.raises(ValueError, match="Missing train_op."):
            tf.estimator.EstimatorSpec(ModeKeys.TRAIN, loss=loss)
        with pytest.raises(ValueError, match="Missing loss."):
            tf.estimator.EstimatorSpec(ModeKeys.EVAL)
        with pytest.raises(ValueError, match="Missing predictions."):
            tf.estimator.EstimatorSpec(ModeKeys.PREDICT)
        with pytest.raises(ValueError, match="Loss must be scalar"):
            tf.estimator.EstimatorSpec(ModeKeys.EVAL, loss=tf.constant([1.0, 2.0]))
        with pytest.raises(TypeError, match="loss must be Tensor"):
            tf.estimator.EstimatorSpec(ModeKeys.EVAL, loss=1.0)
        with pytest.raises(TypeError, match="train_op must be Operation or Tensor"):
            tf.estimator.EstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op="op")
        with pytest.raises(TypeError, match=r"predictions\[p\] must be Tensor"):
            tf.estimator.EstimatorSpec(ModeKeys.PREDICT, predictions={"p": 1})
        with pytest.raises(TypeError, match="eval_metric_ops must be a dict"):
            tf.estimator.EstimatorSpec(ModeKeys.EVAL, loss=loss, eval_metric_ops=[1])
        with pytest.raises(TypeError, match="must be \\(metric_value, update_op\\) tuples"):
            tf.estimator.EstimatorSpec(ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": loss})
        with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances"):
            tf.estimator.EstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op=op,
                                       training_hooks=[1])
        with pytest.raises(TypeError, match="scaffold must be tf.train.Scaffold"):
            tf.estimator.EstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op=op, scaffold=1)
        with pytest.raises(TypeError, match="export_outputs must be dict"):
            tf.estimator.EstimatorSpec(ModeKeys.PREDICT, predictions=loss, export_outputs=[1])
        with pytest.raises(TypeError, match="must be ExportOutput objects"):
            tf.estimator.EstimatorSpec(ModeKeys.PREDICT, predictions=loss,
                                       export_outputs={"a": loss})
        spec = tf.estimator.EstimatorSpec(ModeKeys.EVAL, loss=tf.constant([[2.0]]))
        assert spec.loss.shape.ndims == 0  # a one-element loss is reshaped to a scalar
        assert spec.predictions == {} and spec.eval_metric_ops == {} and spec.training_hooks == ()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must be from the default graph"):
            tf.estimator.EstimatorSpec(ModeKeys.EVAL, loss=loss)


def test_evaluate_refuses_reserved_metric_names(tmp_path):
    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(features)
        return tf.estimator.EstimatorSpec(mode, loss=loss,
                                          eval_metric_ops={"loss": tf.metrics.mean(loss)})

    est = tf.estimator.Estimator(model_fn, str(tmp_path))
    with pytest.raises(ValueError, match='Metric with name "loss" is not allowed'):
        est.evaluate(lambda: (tf.constant([1.0]), None), steps=1)


# ---- RunConfig ---------------------------------------------------------------------------
CLUSTER = {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"], "ps": ["host3:2222"]}


def run_config_for(monkeypatch, tf_config, **kwargs):
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    return tf.estimator.RunConfig(**kwargs)


def test_run_config_defaults_local():
    c = tf.estimator.RunConfig()
    assert (c.model_dir, c.tf_random_seed, c.save_summary_steps) == (None, None, 100)
    assert (c.save_checkpoints_steps, c.save_checkpoints_secs) == (None, 600)
    assert (c.keep_checkpoint_max, c.keep_checkpoint_every_n_hours) == (5, 10000)
    assert (c.log_step_count_steps, c.session_config) == (100, None)
    assert (c.task_type, c.task_id, c.is_chief, c.master, c.evaluation_master) == (
        "worker", 0, True, "", "")
    assert (c.num_ps_replicas, c.num_worker_replicas, c.global_id_in_cluster) == (0, 1, 0)
    assert c.cluster_spec.as_dict() == {}
    assert tf.estimator.RunConfig(save_checkpoints_steps=10).save_checkpoints_secs is None
    assert tf.estimator.RunConfig(save_checkpoints_secs=None).save_checkpoints_steps is None
    with pytest.raises(ValueError, match="`save_checkpoints_steps` and `save_checkpoints_secs` "
                                         "cannot be both set."):
        tf.estimator.RunConfig(save_checkpoints_steps=1, save_checkpoints_secs=1)
    for kwargs, message in [({"save_summary_steps": -1}, "save_summary_steps should be >= 0"),
                            ({"keep_checkpoint_max": -1}, "keep_checkpoint_max should be >= 0"),
                            ({"log_step_count_steps": 0}, "log_step_count_steps should be > 0"),
                            ({"tf_random_seed": 1.5}, "tf_random_seed must be integer."),
                            ({"session_config": {}}, "session_config must be instance of")]:
        with pytest.raises(ValueError, match=message):
            tf.estimator.RunConfig(**kwargs)
    replaced = tf.estimator.RunConfig(save_checkpoints_secs=5).replace(save_checkpoints_steps=3)
    assert (replaced.save_checkpoints_steps, replaced.save_checkpoints_secs) == (3, None)
    with pytest.raises(ValueError, match="task_type property is not allowed to be replaced."):
        c.replace(task_type="ps")


def test_run_config_from_tf_config_roles(monkeypatch):
    c = run_config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
    assert (c.task_type, c.task_id, c.is_chief) == ("worker", 1, False)
    assert (c.master, c.evaluation_master) == ("grpc://host2:2222", "")
    assert (c.num_ps_replicas, c.num_worker_replicas, c.global_id_in_cluster) == (1, 3, 2)
    assert c.cluster_spec.as_dict() == CLUSTER
    assert list(c.session_config.device_filters) == ["/job:ps", "/job:worker/task:1"]
    assert c.session_config.allow_soft_placement

    c = run_config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
    assert (c.is_chief, c.master, c.global_id_in_cluster) == (True, "grpc://host0:2222", 0)
    assert list(c.session_config.device_filters) == ["/job:ps", "/job:chief"]
    c = run_config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "ps", "index": 0}})
    assert (c.is_chief, c.global_id_in_cluster) == (False, 3)

    c = run_config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0},
                                     "session_master": "grpc://elsewhere:1"})
    assert (c.task_type, c.is_chief, c.master, c.evaluation_master) == (
        "evaluator", False, "", "grpc://elsewhere:1")
    assert (c.num_ps_replicas, c.num_worker_replicas, c.global_id_in_cluster) == (0, 0, None)
    assert c.cluster_spec.as_dict() == {} and c.session_config is None

    c = run_config_for(monkeypatch, {"cluster": {"chief": ["h:1"]},
                                     "task": {"type": "chief", "index": 0}})
    assert c.master == ""  # a one-task cluster runs in process

    c = run_config_for(monkeypatch, {"cluster": {"master": ["m:1"], "worker": ["w:1"]},
                                     "task": {"type": "master", "index": 0}})
    assert (c.is_chief, c.master, c.num_worker_replicas) == (True, "grpc://m:1", 2)

    c = run_config_for(monkeypatch, {"model_dir": "/from/tf_config"})
    assert c.model_dir == "/from/tf_config"


@pytest.mark.parametrize("tf_config, message", [
    ({"task": {"type": "ps", "index": 0}},
     'If "cluster" is not set in TF_CONFIG, task type must be WORKER.'),
    ({"task": {"type": "worker", "index": 1}},
     'If "cluster" is not set in TF_CONFIG, task index must be 0.'),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}},
     'If "cluster" is set in TF_CONFIG, it must have one "chief" node.'),
    ({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}},
     'The "cluster" in TF_CONFIG must have only one "chief" node.'),
    ({"cluster": CLUSTER, "task": {"index": 0}},
     'If "cluster" is set in TF_CONFIG, task type must be set.'),
    ({"cluster": CLUSTER, "task": {"type": "worker"}},
     'If "cluster" is set in TF_CONFIG, task index must be set.'),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": -1}},
     "Task index must be non-negative number."),
    ({"cluster": CLUSTER, "task": {"type": "trainer", "index": 0}},
     "trainer is not a valid task_type in the cluster_spec"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}},
     "2 is not a valid task_id for task_type worker in the cluster_spec"),
    ({"cluster": {"master": ["m:1"], "chief": ["c:1"]}, "task": {"type": "master", "index": 0}},
     "If `master` node exists in `cluster`, job `chief` is not supported."),
    ({"cluster": {"master": ["m:1"]}, "task": {"type": "evaluator", "index": 0}},
     "If `master` node exists in `cluster`, task_type `evaluator` is not supported."),
    ({"model_dir": "/a"}, "`model_dir` provided in RunConfig construct, if set, must have"),
])
def test_run_config_tf_config_errors(monkeypatch, tf_config, message):
    with pytest.raises(ValueError, match=message.replace("(", "\\(").replace(")", "\\)")):
        run_config_for(monkeypatch, tf_config, model_dir="/b")


def test_train_refused_on_ps_and_evaluator(monkeypatch, tmp_path):
    config = run_config_for(monkeypatch, {"cluster": CLUSTER, "task": {"type": "ps", "index": 0}})
    est = tf.estimator.Estimator(linear_model_fn, str(tmp_path), config=config, params={})
    with pytest.raises(ValueError, match="Train has been called wrong configuration"):
        est.train(full_batch_input_fn, steps=1)


# ---- numpy_input_fn ----------------------------------------------------------------------
def run_input_fn(input_fn):
    with tf.Graph().as_default():
        out = input_fn()
        batches = []
        with tf.Session() as sess:
            while True:
                try:
                    batches.append(sess.run(out))
                except tf.errors.OutOfRangeError:
                    return batches


def test_numpy_input_fn_batches_epochs_and_targets():
    x = {"b": np.arange(5.0), "a": np.arange(5) * 10}
    batches = run_input_fn(tf.estimator.inputs.numpy_input_fn(
        x, np.arange(5) + 100, batch_size=2, num_epochs=2, shuffle=False))
    # epochs run back to back, a batch may straddle them, the last one is short
    assert [list(f["a"]) for f, _ in batches] == [[0, 10], [20, 30], [40, 0], [10, 20],
                                                  [30, 40]]
    assert [list(y) for _, y in batches][2] == [104, 100]
    only_x = run_input_fn(tf.estimator.inputs.numpy_input_fn(
        np.arange(6.0).reshape(3, 2), batch_size=2, shuffle=False))
    np.testing.assert_array_equal(only_x[1], [[4.0, 5.0]])
    dict_y = run_input_fn(tf.estimator.inputs.numpy_input_fn(
        {"x": np.arange(3)}, {"y1": np.arange(3), "y2": -np.arange(3)}, batch_size=3,
        shuffle=False))
    assert sorted(dict_y[0][1]) == ["y1", "y2"] and list(dict_y[0][1]["y2"]) == [0, -1, -2]
    shuffled = run_input_fn(tf.estimator.inputs.numpy_input_fn(
        {"x": np.arange(50)}, batch_size=10, shuffle=True))
    assert sorted(np.concatenate([b["x"] for b in shuffled])) == list(range(50))


def test_numpy_input_fn_errors():
    with pytest.raises(ValueError, match="shuffle must be provided and explicitly set as boolean"):
        tf.estimator.inputs.numpy_input_fn({"x": np.arange(3)})
    with pytest.raises(NotImplementedError, match="num_threads"):
        tf.estimator.inputs.numpy_input_fn({"x": np.arange(3)}, shuffle=False, num_threads=2)
    cases = [(({"x": np.arange(3)}, np.arange(4)), ValueError, "Length of tensors in x and y"),
             (({}, None), ValueError, "x cannot be an empty dict"),
             (([1, 2], None), TypeError, "x must be a dict or array; got list"),
             (({"x": np.arange(3)}, {"x": np.arange(3)}), ValueError, "1 duplicate keys"),
             (({"x": np.arange(3)}, {}), ValueError, "y cannot be empty dict")]
    for (x, y), error, message in cases:
        with tf.Graph().as_default(), pytest.raises(error, match=message):
            tf.estimator.inputs.numpy_input_fn(x, y, shuffle=False)()


# ---- train_and_evaluate (local mode) ------------------------------------------------------
def eval_steps_written(eval_dir):
    steps = []
    for f in sorted(os.listdir(eval_dir)):
        for event in tf.train.summary_iterator(os.path.join(eval_dir, f)):
            if any(v.tag == "loss" for v in event.summary.value):
                steps.append(event.step)
    return steps


@pytest.mark.parametrize("throttle_secs, evaluated_at", [(0, [2, 4, 6]), (600, [2, 6])])
def test_train_and_evaluate_locally(tmp_path, throttle_secs, evaluated_at):
    est = make_estimator(tmp_path, save_checkpoints_steps=2)
    eval_input = tf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=64, shuffle=False)
    metrics, exports = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(full_batch_input_fn, max_steps=6),
        tf.estimator.EvalSpec(eval_input, steps=None, name="local", throttle_secs=throttle_secs))
    # an evaluation follows each checkpoint but the initial one, at most one per
    # throttle_secs, and always one of the final checkpoint
    assert eval_steps_written(est.eval_dir("local")) == evaluated_at
    w, b = numpy_gd(6)
    assert metrics["global_step"] == 6 and exports == []
    np.testing.assert_allclose(metrics["loss"], np.mean((X @ w + b - Y) ** 2), rtol=1e-5)


def test_evaluator_skips_a_checkpoint_deleted_under_it(tmp_path, monkeypatch, caplog):
    """The chief keeps keep_checkpoint_max checkpoints; one the evaluator picked can be gone
    by the time it restores it: that pass is skipped and the next takes the newest."""
    from dtf.estimator.training import _Evaluator

    est = make_estimator(tmp_path, save_checkpoints_steps=2)
    est.train(full_batch_input_fn, max_steps=4)
    newest = est.latest_checkpoint()
    spec = tf.estimator.EvalSpec(full_batch_input_fn, steps=1, name="gone")
    evaluator = _Evaluator(est, spec)
    monkeypatch.setattr(est, "latest_checkpoint", lambda: os.path.join(est.model_dir, "model.ckpt-2"))
    for suffix in (".index", ".data-00000-of-00001", ".meta"):  # as the chief's Saver deletes it
        path = os.path.join(est.model_dir, "model.ckpt-2" + suffix)
        if os.path.exists(path):
            os.remove(path)
    with caplog.at_level("WARNING", logger="dtf"):
        assert evaluator.evaluate() is None
    assert "model.ckpt-2 was deleted before it could be evaluated" in caplog.text
    monkeypatch.setattr(est, "latest_checkpoint", lambda: newest)
    assert evaluator.evaluate()["global_step"] == 4
    # a checkpoint that is there but lacks a variable is an error, not a skipped pass
    other = make_estimator(tmp_path / "other")
    monkeypatch.setattr(other, "latest_checkpoint", lambda: newest)
    monkeypatch.setattr(other, "_model_fn", lambda features, labels, mode, config: tf.estimator.EstimatorSpec(
        mode, loss=tf.reduce_sum(tf.get_variable("absent", [1])) + tf.reduce_sum(features["x"])))
    with pytest.raises(tf.errors.NotFoundError):
        _Evaluator(other, spec).evaluate()


def test_train_and_evaluate_spec_errors(tmp_path):
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        tf.estimator.TrainSpec(1)
    with pytest.raises(ValueError, match="Must specify max_steps > 0, given: 0"):
        tf.estimator.TrainSpec(full_batch_input_fn, max_steps=0)
    with pytest.raises(ValueError, match="Must specify steps > 0, given: 0"):
        tf.estimator.EvalSpec(full_batch_input_fn, steps=0)
    with pytest.raises(ValueError, match="Must specify throttle_secs >= 0"):
        tf.estimator.EvalSpec(full_batch_input_fn, throttle_secs=-1)
    with pytest.raises(TypeError, match="`name` must be string"):
        tf.estimator.EvalSpec(full_batch_input_fn, name=1)
    with pytest.raises(TypeError, match="`exporters` must be an Exporter"):
        tf.estimator.EvalSpec(full_batch_input_fn, exporters=[object()])
    spec = tf.estimator.EvalSpec(full_batch_input_fn)
    assert (spec.steps, spec.start_delay_secs, spec.throttle_secs) == (100, 120, 600)
    est = make_estimator(tmp_path)
    with pytest.raises(TypeError, match="`eval_spec` must have type `tf.estimator.EvalSpec`"):
        tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(full_batch_input_fn), None)
    with pytest.raises(ValueError, match="There should be a CheckpointSaverHook to use "
                                         "saving_listeners"):
        make_estimator(tmp_path, save_checkpoints_secs=None).train(
            full_batch_input_fn, steps=1, saving_listeners=[tf.train.CheckpointSaverListener()])


def test_only_one_evaluator_task(monkeypatch, tmp_path):
    config = run_config_for(monkeypatch, {"cluster": CLUSTER,
                                          "task": {"type": "evaluator", "index": 1}})
    est = tf.estimator.Estimator(linear_model_fn, str(tmp_path), config=config, params={})
    with pytest.raises(ValueError, match="there can only be one `evaluator` task"):
        tf.estimator.train_and_evaluate(est, tf.estimator.TrainSpec(full_batch_input_fn),
                                        tf.estimator.EvalSpec(full_batch_input_fn))


def test_eval_summary_of_array_and_int_metrics(tmp_path):
    def model_fn(features, labels, mode):
        loss = tf.reduce_mean(features)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
            "vec": (tf.constant([1.5, 2.5]), tf.no_op()),
            "count": (tf.constant(3, tf.int64), tf.no_op())})

    est = tf.estimator.Estimator(model_fn, str(tmp_path))
    results = est.evaluate(lambda: (tf.constant([1.0, 3.0]), None), steps=1)
    np.testing.assert_array_equal(results["vec"], [1.5, 2.5])
    assert results["count"] == 3 and results["loss"] == 2.0 and results["global_step"] == 0
    values = {}
    for f in os.listdir(est.eval_dir()):
        for event in tf.train.summary_iterator(os.path.join(est.eval_dir(), f)):
            values.update({v.tag: v for v in event.summary.value})
    assert set(values) == {"vec", "count", "loss"}  # no checkpoint: no checkpoint_path
    assert values["count"].simple_value == 3.0
    np.testing.assert_array_equal(
        np.frombuffer(values["vec"].tensor.tensor_content, "<f4"), [1.5, 2.5])


def test_warm_start_from_another_model_dir(tmp_path):
    source = tf.estimator.Estimator(linear_model_fn, str(tmp_path / "source"), params={"lr": LR})
    source.train(full_batch_input_fn, steps=5)
    w5, b5 = numpy_gd(5)
    warm = tf.estimator.Estimator(linear_model_fn, str(tmp_path / "warm"), params={"lr": LR},
                                  warm_start_from=str(tmp_path / "source"))
    # with no checkpoint of its own, evaluate starts from the warm-start checkpoint
    loss = warm.evaluate(full_batch_input_fn, steps=1)["loss"]
    np.testing.assert_allclose(loss, np.mean((X @ w5 + b5 - Y) ** 2), rtol=1e-5)
    warm.train(full_batch_input_fn, steps=1)  # trainable variables only: the step restarts
    assert warm.get_variable_value("global_step") == 1
    np.testing.assert_allclose(warm.get_variable_value("w"), numpy_gd(6)[0], rtol=1e-5)
    warm.train(full_batch_input_fn, steps=1)  # its own checkpoint now wins
    np.testing.assert_allclose(warm.get_variable_value("w"), numpy_gd(7)[0], rtol=1e-5)

    only_b = tf.estimator.Estimator(
        linear_model_fn, str(tmp_path / "only_b"), params={"lr": LR},
        warm_start_from=tf.estimator.WarmStartSettings(str(tmp_path / "source"),
                                                       vars_to_warm_start="b"))
    # constant features never run out: predict yields forever (and warns), so take one batch
    batches = only_b.predict(lambda: {"x": tf.constant(X[:2])}, yield_single_examples=False,
                             predict_keys=["y"])
    np.testing.assert_allclose(next(batches)["y"], np.broadcast_to(b5, (2, 1)), rtol=1e-5)
    batches.close()

    renamed = tf.estimator.Estimator(
        linear_model_fn, str(tmp_path / "renamed"), params={"lr": LR},
        warm_start_from=tf.estimator.WarmStartSettings(
            str(tmp_path / "source"), var_name_to_prev_var_name={"bias": "b"}))
    with pytest.raises(ValueError, match="var_name_to_prev_var_name that were not used"):
        renamed.train(full_batch_input_fn, steps=1)
    with pytest.raises(ValueError, match="`ckpt_to_initialize_from` MUST be set"):
        tf.estimator.WarmStartSettings("")
    with pytest.raises(NotImplementedError, match="var_name_to_vocab_info"):
        tf.estimator.WarmStartSettings("x", var_name_to_vocab_info={"w": 1})
