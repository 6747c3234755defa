"""A checkpoint index is data from disk: the files it names must be its own. An index
naming ``../x`` or an absolute path must never make the Saver read or delete that path."""
import json
import os

import numpy as np
import pytest

import dtf as tf
from dtf.state import checkpoint_io


def _tamper(prefix, data_file):
    """Replaces the checkpoint's index by one in dtf's earlier JSON format, the only format
    whose index names its data files (TF's V2 bundle derives them from the prefix)."""
    idx = {"format": "dtf-checkpoint-v1", "data_files": [data_file],
           "tensors": {"v": {"dtype": "float32", "shape": [3], "shard": 0, "offset": 0,
                             "length": 12, "crc32": 0}}}
    with open(checkpoint_io.index_path(prefix), "w") as f:
        json.dump(idx, f)


@pytest.fixture(params=["relative", "absolute"])
def victim(tmp_path, request):
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "precious.txt"
    path.write_text("keep me")
    ckpt_dir = tmp_path / "ckpt"
    ckpt_dir.mkdir()
    name = "../outside/precious.txt" if request.param == "relative" else str(path)
    return ckpt_dir, path, name


def test_overwriting_a_tampered_checkpoint_leaves_outside_files_alone(victim):
    ckpt_dir, precious, name = victim
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    saver = tf.train.Saver()
    prefix = str(ckpt_dir / "model.ckpt")
    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, prefix)
        _tamper(prefix, name)
        with pytest.raises(tf.errors.DataLossError, match="precious.txt"):
            saver.restore(sess, prefix)
        saver.save(sess, prefix)  # overwrites the tampered index
        saver.restore(sess, prefix)
    assert precious.read_text() == "keep me"


def test_rotating_out_a_tampered_checkpoint_leaves_outside_files_alone(victim):
    ckpt_dir, precious, name = victim
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    saver = tf.train.Saver(max_to_keep=1)
    prefix = str(ckpt_dir / "model.ckpt")
    with tf.Session() as sess:
        sess.run(v.initializer)
        first = saver.save(sess, prefix, global_step=1)
        _tamper(first, name)
        saver.save(sess, prefix, global_step=2)  # rotates the first one out
        tf.train.remove_checkpoint(first)
    assert precious.read_text() == "keep me"
    assert not os.path.exists(checkpoint_io.index_path(first))


def test_reader_refuses_an_index_naming_another_checkpoints_file(tmp_path):
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        a = saver.save(sess, str(tmp_path / "a"))
        saver.save(sess, str(tmp_path / "b"))
    _tamper(a, "b.data-00000-of-00001")
    with pytest.raises(tf.errors.DataLossError, match="b.data-00000-of-00001"):
        tf.train.NewCheckpointReader(a)


def test_latest_checkpoint_names_a_missing_index(tmp_path, caplog):
    v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7)
    os.remove(checkpoint_io.index_path(path))
    with caplog.at_level("ERROR", logger="dtf"):
        assert tf.train.latest_checkpoint(str(tmp_path)) is None
    assert f"Couldn't match files for checkpoint {path}" in caplog.text
    assert checkpoint_io.index_path(path) in caplog.text
