"""tf.saved_model: a SavedModel written by dtf read back into a dtf Session, one written by
TensorFlow (tests/fixtures/tf/saved_model_dense) loaded by dtf, an Estimator's export, and
(with DTF_TEST_TF_PYTHON) TensorFlow's loader reading dtf's SavedModel."""
import json
import os

import numpy as np
import pytest

import dtf as tf
from tests.tf_subprocess import run_tf

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf")


def _write_dense(path):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.get_variable("w", initializer=tf.constant([[1.0], [2.0]]))
        y = tf.add(tf.matmul(x, w), 0.5, name="y")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign([[3.0], [4.0]]))
            tf.saved_model.simple_save(sess, str(path), {"x": x}, {"y": y})


def test_simple_save_layout_and_load(tmp_path):
    out = tmp_path / "m"
    _write_dense(out)
    assert sorted(os.listdir(out)) == ["saved_model.pb", "variables"]
    assert sorted(os.listdir(out / "variables")) == ["variables.data-00000-of-00001",
                                                     "variables.index"]
    assert tf.saved_model.loader.maybe_saved_model_directory(str(out))
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING], str(out))
        sig = meta.signature_def[tf.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        assert sig.method_name == "tensorflow/serving/predict"
        assert sig.inputs["x"].name == "x:0" and sig.outputs["y"].name == "y:0"
        assert [d.size for d in sig.inputs["x"].tensor_shape.dim] == [-1, 2]
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: [[1.0, 1.0]]})
    np.testing.assert_allclose(got, [[7.5]])


def test_load_errors(tmp_path):
    out = tmp_path / "m"
    _write_dense(out)
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(RuntimeError, match="could not be found in SavedModel"):
            tf.saved_model.loader.load(sess, ["train"], str(out))
        with pytest.raises(IOError, match="SavedModel file does not exist"):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "nothing"))
    with pytest.raises(AssertionError, match="isn't empty"):
        tf.saved_model.builder.SavedModelBuilder(str(out))


def test_builder_two_meta_graphs_and_main_op(tmp_path):
    out = tmp_path / "b"
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=tf.constant(2.0))
        counter = tf.get_variable("counter", initializer=tf.constant(0.0),
                                  collections=[tf.GraphKeys.LOCAL_VARIABLES])
        main_op = tf.group(tf.local_variables_initializer(), name="main_op")
        b = tf.saved_model.builder.SavedModelBuilder(str(out))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(v.assign(5.0))
            b.add_meta_graph_and_variables(sess, ["serve"], main_op=main_op)
            with pytest.raises(AssertionError, match="already been saved"):
                b.add_meta_graph_and_variables(sess, ["train"])
            b.add_meta_graph(["train", "gpu"], main_op=main_op)
        b.save()
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.saved_model.loader.load(sess, ["gpu", "train"], str(out))
        assert sess.run("v:0") == 5.0 and sess.run("counter:0") == 0.0


def test_loads_a_savedmodel_written_by_tensorflow():
    io = np.load(os.path.join(FIXTURES, "saved_model_io.npz"))
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], os.path.join(FIXTURES,
                                                                          "saved_model_dense"))
        sig = meta.signature_def["serving_default"]
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: io["x"]})
    np.testing.assert_allclose(got, io["y"], rtol=1e-5, atol=1e-6)


def _trained_classifier(tmp_path):
    fc = tf.feature_column
    rng = np.random.RandomState(0)
    x = rng.randn(32, 2).astype(np.float32)
    color = rng.choice(["red", "blue"], 32)
    y = (x[:, 0] > 0).astype(np.int64)
    cols = [fc.numeric_column("x", shape=(2,)), fc.indicator_column(
        fc.categorical_column_with_vocabulary_list("color", ["red", "blue"]))]
    est = tf.estimator.DNNClassifier([4], cols, model_dir=str(tmp_path / "model"))
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x, "color": color}, y, batch_size=8,
                                                 num_epochs=None, shuffle=True), steps=20)
    want = np.stack([p["probabilities"] for p in est.predict(tf.estimator.inputs.numpy_input_fn(
        {"x": x[:4], "color": color[:4]}, shuffle=False))])
    return est, cols, x[:4], color[:4], want


def test_estimator_export_raw_receiver_gives_the_predict_signature(tmp_path):
    est, _, x, color, want = _trained_classifier(tmp_path)
    with tf.Graph().as_default():
        receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, 2]), "color": tf.placeholder(tf.string, [None])})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver)
    assert isinstance(export_dir, bytes) and os.path.basename(export_dir).isdigit()
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        # As TF: the classify and regress outputs need serialized Examples, so with raw
        # tensors only the predict signature is exported.
        assert set(meta.signature_def) == {"predict"}
        sig = meta.signature_def["predict"]
        assert {"probabilities", "class_ids", "logits", "classes"} <= set(sig.outputs)
        got = sess.run(sig.outputs["probabilities"].name,
                       {sig.inputs["x"].name: x, sig.inputs["color"].name: color})
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_estimator_export_parsing_receiver_gives_classify_signatures(tmp_path):
    est, cols, x, color, want = _trained_classifier(tmp_path)
    spec = tf.feature_column.make_parse_example_spec(cols)
    assert set(spec) == {"x", "color"}
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)
    export_dir = est.export_savedmodel(str(tmp_path / "export"), receiver)
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=list(row))),
        "color": tf.train.Feature(bytes_list=tf.train.BytesList(value=[c.encode()]))}))
        .SerializeToString() for row, c in zip(x, color)]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir)
        assert set(meta.signature_def) == {"serving_default", "classification", "regression",
                                           "predict"}
        sig = meta.signature_def["serving_default"]
        assert sig.method_name == "tensorflow/serving/classify"
        assert set(sig.inputs) == {"inputs"} and set(sig.outputs) == {"classes", "scores"}
        scores, classes = sess.run([sig.outputs["scores"].name, sig.outputs["classes"].name],
                                   {sig.inputs["inputs"].name: examples})
    np.testing.assert_allclose(scores, want, rtol=1e-5)
    assert classes.tolist() == [[b"0", b"1"]] * 4


def test_tensorflow_loads_dtf_savedmodel(tmp_path):
    out = tmp_path / "m"
    _write_dense(out)
    got = run_tf("""
with tf.Session(graph=tf.Graph()) as sess:
    meta = tf.saved_model.loader.load(sess, ["serve"], sys.argv[1])
    sig = meta.signature_def["serving_default"]
    print(json.dumps(sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: [[1.0, 1.0]]}).tolist()))
""", str(out))
    assert got.strip().splitlines()[-1] == "[[7.5]]"


def test_export_outputs_default_rules():
    from dtf.estimator.export_output import get_export_outputs

    with tf.Graph().as_default():
        p = tf.constant([[1.0]])
        default = get_export_outputs(None, {"p": p})
        assert list(default) == ["serving_default"]
        assert isinstance(default["serving_default"], tf.estimator.export.PredictOutput)
        one = get_export_outputs({"mine": tf.estimator.export.RegressionOutput(p)}, None)
        assert set(one) == {"mine", "serving_default"}
        with pytest.raises(ValueError, match="none of them is specified as the default"):
            get_export_outputs({"a": tf.estimator.export.PredictOutput(p),
                                "b": tf.estimator.export.PredictOutput(p)}, None)
        with pytest.raises(ValueError, match="single string Tensor"):
            tf.estimator.export.ClassificationOutput(scores=p).as_signature_def({"x": p})


def test_tensorflow_serves_an_exported_wide_and_deep_model(tmp_path):
    """TF's loader runs dtf's export of a model with hashed, crossed, bucketized and
    vocabulary columns (StringToHashBucketFast, SparseCross, Bucketize, AsString in TF's
    own kernels) and gives the probabilities dtf's predict gave."""
    fc = tf.feature_column
    rng = np.random.RandomState(0)
    x = rng.randn(64).astype(np.float32)
    w = rng.choice(["a", "b", "c", "d"], 64)
    k = rng.randint(0, 5, 64).astype(np.int64)
    y = ((x > 0) ^ (w == "a")).astype(np.int64)
    b = fc.bucketized_column(fc.numeric_column("x"), [-1.0, 0.0, 1.0])
    linear = [b, fc.categorical_column_with_hash_bucket("w", 7), fc.crossed_column([b, "w"], 11),
              fc.categorical_column_with_vocabulary_list("k", [1, 2, 3], num_oov_buckets=1)]
    dnn = [fc.numeric_column("x"),
           fc.embedding_column(fc.categorical_column_with_hash_bucket("w", 7), 2),
           fc.indicator_column(fc.categorical_column_with_identity("k", 5))]
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "model"), linear_feature_columns=linear,
        dnn_feature_columns=dnn, dnn_hidden_units=[4])
    est.train(tf.estimator.inputs.numpy_input_fn({"x": x, "w": w, "k": k}, y, batch_size=16,
                                                 num_epochs=None, shuffle=True), steps=30)
    feed = {"x": x[:5], "w": w[:5], "k": k[:5]}
    want = np.stack([p["probabilities"] for p in est.predict(
        tf.estimator.inputs.numpy_input_fn(feed, shuffle=False))])
    with tf.Graph().as_default():
        receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None]), "w": tf.placeholder(tf.string, [None]),
             "k": tf.placeholder(tf.int64, [None])})
    export_dir = est.export_saved_model(str(tmp_path / "export"), receiver)
    np.savez(tmp_path / "io.npz", **feed)
    got = run_tf("""
io = np.load(sys.argv[2])
with tf.Session(graph=tf.Graph()) as sess:
    meta = tf.saved_model.loader.load(sess, ["serve"], sys.argv[1])
    sig = meta.signature_def["predict"]
    out = sess.run(sig.outputs["probabilities"].name, {sig.inputs[k].name: io[k] for k in "xwk"})
    print(json.dumps(out.tolist()))
""", export_dir.decode(), str(tmp_path / "io.npz"))
    np.testing.assert_allclose(json.loads(got.strip().splitlines()[-1]), want, rtol=1e-5,
                               atol=1e-6)


def test_train_and_evaluate_runs_the_exporters(tmp_path):
    fc = tf.feature_column
    rng = np.random.RandomState(1)
    x = rng.randn(64, 2).astype(np.float32)
    y = (x @ np.array([1.0, -1.0], np.float32)).astype(np.float32)
    est = tf.estimator.LinearRegressor([fc.numeric_column("x", shape=(2,))],
                                       config=tf.estimator.RunConfig(model_dir=str(tmp_path),
                                                                     save_checkpoints_steps=10))
    with tf.Graph().as_default():
        receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
            {"x": tf.placeholder(tf.float32, [None, 2])})
    latest = tf.estimator.LatestExporter("latest", receiver, exports_to_keep=1)
    final = tf.estimator.FinalExporter("final", receiver)
    metrics, exports = tf.estimator.train_and_evaluate(
        est, tf.estimator.TrainSpec(tf.estimator.inputs.numpy_input_fn(
            {"x": x}, y, batch_size=16, num_epochs=None, shuffle=True), max_steps=30),
        tf.estimator.EvalSpec(tf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=False),
                              steps=None, throttle_secs=0, exporters=[latest, final]))
    assert metrics["global_step"] == 30 and len(exports) == 2
    assert all(isinstance(e, bytes) and os.path.isdir(e) for e in exports)
    assert len(os.listdir(tmp_path / "export" / "latest")) == 1   # exports_to_keep=1
    assert len(os.listdir(tmp_path / "export" / "final")) == 1    # the final evaluation only
    with pytest.raises(ValueError, match="unique names"):
        tf.estimator.EvalSpec(lambda: None, exporters=[latest, latest])
