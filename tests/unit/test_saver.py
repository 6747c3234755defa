import os

import numpy as np
import pytest

import dtf as tf
from dtf.state import checkpoint_io
from dtf.train.server import free_port


def _model():
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    s = tf.Variable([b"a", b"bc"], name="s")
    n = tf.Variable(np.int64(7), name="n")
    return w, s, n


def test_save_restore_roundtrip_and_state_file(tmp_path):
    w, s, n = _model()
    saver = tf.train.Saver()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, prefix, global_step=100) == prefix + "-100"
        sess.run([w.assign(tf.zeros([2, 3])), n.assign(0)])
        saver.restore(sess, prefix + "-100")
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))
        assert list(sess.run(s)) == [b"a", b"bc"] and sess.run(n) == 7
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-100.data-00000-of-00001",
                                            "model.ckpt-100.index", "model.ckpt-100.meta"]
    assert (tmp_path / "checkpoint").read_text() == (
        f'model_checkpoint_path: "{prefix}-100"\nall_model_checkpoint_paths: "{prefix}-100"\n')
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == prefix + "-100"
    assert state.all_model_checkpoint_paths == [prefix + "-100"]
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix + "-100"
    assert tf.train.checkpoint_exists(prefix + "-100") and not tf.train.checkpoint_exists(prefix)


def test_saver_graph_ops_and_var_list_dict(tmp_path):
    w, s, n = _model()
    saver = tf.train.Saver({"renamed": w})
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert {"save/filename", "save/Const", "save/SaveV2", "save/RestoreV2",
            "save/restore_all"} <= set(names)
    assert saver.saver_def.filename_tensor_name == "save/Const:0"
    with tf.Session() as sess:
        sess.run(w.initializer)
        path = saver.save(sess, str(tmp_path / "m"))
    assert tf.train.list_variables(path) == [("renamed", [2, 3])]
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path), "renamed:0"),
                                  np.arange(6).reshape(2, 3))
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == {"renamed": [2, 3]}
    assert reader.has_tensor("renamed") and not reader.has_tensor("w")
    with pytest.raises(tf.errors.NotFoundError, match="Key w not found in checkpoint"):
        reader.get_tensor("w")


def test_max_to_keep_deletes_old_checkpoints(tmp_path):
    v = tf.Variable(0, name="v")
    inc = v.assign_add(1)
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "ckpt")
    with tf.Session() as sess:
        sess.run(v.initializer)
        for step in range(1, 5):
            sess.run(inc)
            saver.save(sess, prefix, global_step=step)
    assert saver.last_checkpoints == [prefix + "-3", prefix + "-4"]
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".index")) == ["ckpt-3.index",
                                                                              "ckpt-4.index"]
    assert tf.train.get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == [
        prefix + "-3", prefix + "-4"]
    assert tf.train.load_variable(str(tmp_path), "v") == 4


def test_relative_paths_in_state_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("run")
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert saver.save(sess, "run/model", global_step=3) == "run/model-3"
    assert 'model_checkpoint_path: "model-3"' in (tmp_path / "run" / "checkpoint").read_text()
    assert tf.train.latest_checkpoint("run") == os.path.join("run", "model-3")


def test_restore_errors(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = saver.save(sess, str(tmp_path / "m"))
        missing = str(tmp_path / "nothing")
        with pytest.raises(tf.errors.NotFoundError, match=missing):
            saver.restore(sess, missing)
        with pytest.raises(ValueError):  # TF1's Saver raises ValueError here
            saver.restore(sess, missing)
    with tf.Graph().as_default():
        tf.Variable([1.0, 2.0, 3.0], name="v")
        tf.Variable(0.0, name="extra")
        saver2 = tf.train.Saver()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.NotFoundError, match="Key extra not found in checkpoint"):
                saver2.restore(sess, path)
        saver3 = tf.train.Saver({"v": tf.global_variables()[0]})
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[3\].*\[2\]"):
                saver3.restore(sess, path)
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.NewCheckpointReader(str(tmp_path / "absent"))


def test_save_errors(tmp_path):
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
            saver.save(sess, str(tmp_path / "m"))
        sess.run(v.initializer)
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
            saver.save(sess, str(tmp_path / "no" / "such" / "m"))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to save"):
            tf.train.Saver()
        with tf.Session() as sess:
            assert tf.train.Saver(allow_empty=True).save(sess, "x") is None


def test_sharded_save_writes_one_file_per_device(tmp_path):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable([1.0], name="a")
    with tf.device("/job:ps/task:1"):
        b = tf.Variable([2.0, 3.0], name="b")
    saver = tf.train.Saver(sharded=True)
    shard_ops = [op for op in tf.get_default_graph().get_operations() if op.type == "SaveV2"]
    assert sorted(op.device for op in shard_ops) == ["/job:ps/task:0", "/job:ps/task:1"]
    # A plain local session has no /job:ps (TF refuses the graph), so two ps tasks serve it.
    cluster = {"ps": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
    servers = [tf.train.Server(cluster, job_name="ps", task_index=i) for i in range(2)]
    with tf.Session(servers[0].target) as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"), global_step=5)
        sess.run([a.assign([0.0]), b.assign([0.0, 0.0])])
        saver.restore(sess, path)
        assert sess.run(a).tolist() == [1.0] and sess.run(b).tolist() == [2.0, 3.0]
    for server in servers:
        server.stop()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-5.data-00000-of-00002",
                                            "m-5.data-00001-of-00002", "m-5.index", "m-5.meta"]


def _failing_write(monkeypatch):
    def boom(f, chunk):
        f.write(chunk[: len(chunk) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_io, "_write_chunk", boom)


def test_crash_mid_save_keeps_newest_good_checkpoint(tmp_path, monkeypatch):
    v = tf.Variable([1.0, 2.0], name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(v.initializer)
        good = saver.save(sess, prefix, global_step=1)
        sess.run(v.assign([5.0, 6.0]))
        _failing_write(monkeypatch)
        with pytest.raises(tf.errors.OpError):
            saver.save(sess, prefix, global_step=2)
        with pytest.raises(tf.errors.OpError):
            saver.save(sess, prefix, global_step=1)  # overwriting the good one also fails
        monkeypatch.undo()
        assert tf.train.latest_checkpoint(str(tmp_path)) == good
        assert not tf.train.checkpoint_exists(prefix + "-2")
        saver.restore(sess, good)
        assert sess.run(v).tolist() == [1.0, 2.0]
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]


def test_overwriting_a_prefix_keeps_tf_file_names(tmp_path):
    # TF finds data files by name, so a re-save replaces them (renamed over, after the
    # new bytes are on disk); the crash test above shows a failed overwrite keeps the old.
    v = tf.Variable(1.0, name="v")
    saver = tf.train.Saver()
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(v.initializer)
        for value in (2.0, 3.0, 4.0):
            sess.run(v.assign(value))
            saver.save(sess, prefix)
            assert tf.train.load_variable(prefix, "v") == value
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.data-00000-of-00001", "m.index", "m.meta"]


def test_checkpoint_corruption_is_data_loss(tmp_path):
    checkpoint_io.write(str(tmp_path / "c"), ["x"], [np.arange(4.0)])
    data = tmp_path / "c.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[3] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match="Checksum does not match"):
        tf.train.load_variable(str(tmp_path / "c"), "x")
