"""Representative dtf graphs, exported as meta graphs, imported by real TensorFlow
(``tf.train.import_meta_graph`` in a separate process, with DTF_TEST_TF_PYTHON) which
restores dtf's checkpoint, runs the same fetches with the same feeds (and one training
step where there is one) and must get dtf's values. This is what keeps dtf's op
signatures (inputs, attrs, attr kinds) TF's own: a node TF's op registry rejects fails
the import here."""
from __future__ import annotations

import json

import numpy as np
import pytest

import dtf as tf
from tests.tf_subprocess import run_tf, tf_python

TF_RUN = """
meta, ckpt, feeds_path, spec = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
feeds = dict(np.load(feeds_path, allow_pickle=False)) if feeds_path != "-" else {}
feeds = {k.replace("__", "/"): v for k, v in feeds.items()}
saver = tf.train.import_meta_graph(meta)
out = {}
with tf.Session() as sess:
    if ckpt != "-":
        saver.restore(sess, ckpt)
    for init in spec.get("init", []):
        sess.run(init, feeds)
    for i, fetches in enumerate(spec["steps"]):
        vals = sess.run(fetches, feeds)
        out[str(i)] = [np.asarray(v).tolist() if not isinstance(v, bytes) else v.decode()
                       for v in vals]
    if spec.get("save"):
        sd = saver.saver_def
        out["saved"] = sess.run(sd.save_tensor_name, {sd.filename_tensor_name: spec["save"]}).decode()
print(json.dumps(out))
"""


def _dtf_run(sess, spec, feeds):
    out = {}
    for init in spec.get("init", []):
        sess.run(init, feeds)
    for i, fetches in enumerate(spec["steps"]):
        out[str(i)] = [np.asarray(v).tolist() for v in sess.run(fetches, feeds)]
    return out


def _check(tmp_path, spec, feeds=None, restore=True, atol=1e-5):
    """Saves the default graph's variables and meta graph; runs ``spec`` in dtf and TF."""
    feeds = feeds or {}
    meta = str(tmp_path / "model.meta")
    saver = tf.train.Saver(sharded=spec.pop("sharded", False)) if restore else None
    with tf.Session() as sess:
        ckpt = "-"
        if restore:
            sess.run(tf.global_variables_initializer())
            ckpt = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
        tf.train.export_meta_graph(meta, saver_def=saver.saver_def if saver else None)
        want = _dtf_run(sess, spec, feeds)
    feeds_path = "-"
    if feeds:
        feeds_path = str(tmp_path / "feeds.npz")
        np.savez(feeds_path, **{k.replace("/", "__"): v for k, v in feeds.items()})
    got = json.loads(run_tf(TF_RUN, meta, ckpt, feeds_path, json.dumps(spec)))
    for key, values in want.items():
        for w, g in zip(values, got[key]):
            if isinstance(w, (list, float, int)) and not _is_text(w):
                np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                           atol=atol, rtol=1e-4, err_msg=f"step {key}")
            else:
                assert g == w
    return got


def _is_text(v):
    while isinstance(v, list) and v:
        v = v[0]
    return isinstance(v, (str, bytes))


@pytest.fixture(autouse=True)
def _needs_tf_and_fresh_graph():
    tf_python()
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        yield


def test_mlp_with_adam_summaries_and_a_sharded_saver(tmp_path):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    with tf.device("/cpu:0"):
        h = tf.layers.dense(x, 4, activation=tf.nn.relu, name="h")
    out = tf.layers.dense(h, 1, name="out")
    loss = tf.reduce_mean(tf.square(out - y), name="loss")
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("h", h)
    merged = tf.summary.merge_all()
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step, name="train")
    rng = np.random.RandomState(0)
    feeds = {"x:0": rng.randn(8, 3).astype(np.float32), "y:0": rng.randn(8, 1).astype(np.float32)}
    spec = {"sharded": True, "steps": [["loss:0"], [train.name], ["loss:0", step.name]],
            "save": str(tmp_path / "from_tf")}
    got = _check(tmp_path, spec, feeds)
    assert got["saved"] == str(tmp_path / "from_tf")
    assert merged is not None
    reader = tf.train.load_checkpoint(got["saved"])  # TF's merged sharded save reads in dtf
    assert int(reader.get_tensor("global_step")) == 1


def _example(i):
    f = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "a": f(float_list=tf.train.FloatList(value=[i, i + 0.5])),
        "ids": f(int64_list=tf.train.Int64List(value=list(range(i + 1)))),
        "seq": f(int64_list=tf.train.Int64List(value=list(range(2 * (i % 2 + 1))))),
        "name": f(bytes_list=tf.train.BytesList(value=[b"n%d" % i]))})).SerializeToString()


def test_parse_example_pipeline(tmp_path):
    records = [_example(i) for i in range(3)]
    serialized = tf.placeholder(tf.string, [None], name="serialized")
    features = {"a": tf.FixedLenFeature([2], tf.float32),
                "ids": tf.VarLenFeature(tf.int64),
                "seq": tf.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
                "missing": tf.FixedLenFeature([], tf.int64, default_value=7),
                "name": tf.FixedLenFeature([], tf.string)}
    parsed = tf.parse_example(serialized, features)
    one = tf.parse_single_example(serialized[0], features)
    csv = tf.decode_csv(tf.constant(["1,2.5,x", "3,,y"]), [[0], [1.0], ["z"]], name="csv")
    fetches = [parsed["a"].name, parsed["ids"].values.name, parsed["ids"].indices.name,
               parsed["ids"].dense_shape.name, parsed["seq"].name, parsed["missing"].name,
               one["a"].name, one["ids"].values.name, one["seq"].name] + [c.name for c in csv]
    feeds = {"serialized:0": np.asarray(records, dtype=object)}
    rec_path = str(tmp_path / "records.npy")
    np.save(rec_path, np.asarray([r.hex() for r in records]))
    spec = {"steps": [fetches]}
    # Strings do not travel through the npz of feeds; TF's side decodes hex records instead.
    with tf.Session() as sess:
        want = _dtf_run(sess, spec, feeds)
    tf.train.export_meta_graph(str(tmp_path / "model.meta"))
    got = json.loads(run_tf("""
        meta, records, fetches = sys.argv[1], np.load(sys.argv[2]), json.loads(sys.argv[3])
        tf.train.import_meta_graph(meta)
        with tf.Session() as sess:
            vals = sess.run(fetches, {"serialized:0": [bytes.fromhex(r) for r in records]})
        print(json.dumps([np.asarray(v).astype(object if v.dtype == object else v.dtype)
                          .tolist() if v.dtype != object else [x.decode() for x in v.reshape(-1)]
                          for v in vals]))
        """, str(tmp_path / "model.meta"), rec_path, json.dumps(fetches)))
    for name, w, g in zip(fetches, want["0"], got):
        if _is_text(w) or isinstance(w, bytes):
            assert [x.decode() if isinstance(x, bytes) else x for x in np.asarray(w).reshape(-1)] == g, name
        else:
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), err_msg=name)
