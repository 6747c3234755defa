"""A partitioned variable (and its optimizer slots) is saved as TF saves it: one entry of the
full shape listing its slices, one entry per slice (TF's slice specs), so a checkpoint
restores onto any number of shards, into TF as into dtf."""
import json
import os

import numpy as np
import pytest

import dtf as tf
from dtf.state import checkpoint_io
from tests.tf_subprocess import run_tf

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf")


def _model(shards, name="emb"):
    """A [7, 2] variable in ``shards`` parts trained by Adam: (parts, optimizer, train op)."""
    tf.reset_default_graph()
    parts = tf.get_variable(name, shape=[7, 2], partitioner=tf.fixed_size_partitioner(shards),
                            initializer=tf.random_normal_initializer(seed=1))
    step = tf.train.get_or_create_global_step()
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.minimize(tf.reduce_sum(tf.square(tf.concat(list(parts), 0) - 1.0)), global_step=step)
    return list(parts), opt, train


def _whole(sess, parts, opt=None, slot=None):
    tensors = [opt.get_slot(p, slot) for p in parts] if slot else parts
    return sess.run(tf.concat(tensors, 0))


def _save_three_shards(tmp_path):
    parts, opt, train = _model(3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = tf.train.Saver().save(sess, str(tmp_path / "model"), write_meta_graph=False)
        want = {k: _whole(sess, parts, opt, s) for k, s in
                (("emb", None), ("emb/Adam", "m"), ("emb/Adam_1", "v"))}
    return path, want


def test_shards_are_saved_as_slices_of_the_full_name(tmp_path):
    path, want = _save_three_shards(tmp_path)
    reader = checkpoint_io.open_reader(path)
    assert sorted(reader.names()) == ["beta1_power", "beta2_power", "emb", "emb/Adam", "emb/Adam_1",
                                      "global_step"]
    for name in ("emb", "emb/Adam", "emb/Adam_1"):
        entry = reader._entry(name)
        assert reader.shape(name) == [7, 2] and len(entry.slices) == 3
        starts = sorted((s.extent[0].start, s.extent[0].length) for s in entry.slices)
        assert starts == [(0, 3), (3, 2), (5, 2)]
        np.testing.assert_array_equal(tf.train.load_variable(path, name), want[name])


def test_restore_onto_fewer_shards(tmp_path):
    path, want = _save_three_shards(tmp_path)
    for shards in (2, 1):
        parts, opt, train = _model(shards)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            np.testing.assert_array_equal(_whole(sess, parts), want["emb"])
            np.testing.assert_array_equal(_whole(sess, parts, opt, "m"), want["emb/Adam"])
            np.testing.assert_array_equal(_whole(sess, parts, opt, "v"), want["emb/Adam_1"])
            sess.run(train)  # and trains on


def test_a_tf_partitioned_variable_with_adam_slots_restores_onto_three_shards():
    with np.load(os.path.join(FIXTURES, "adam_values.npz")) as d:
        want = {k.replace("__", "/"): d[k] for k in d.files}
    tf.reset_default_graph()
    parts = list(tf.get_variable("part", shape=[5, 2], partitioner=tf.fixed_size_partitioner(3)))
    opt = tf.train.AdamOptimizer(0.1)
    opt.minimize(tf.reduce_sum(tf.concat(parts, 0)))
    slots = [opt.get_slot(p, s) for s in ("m", "v") for p in parts]
    with tf.Session() as sess:
        tf.train.Saver(parts + slots).restore(sess, os.path.join(FIXTURES, "adam_ckpt", "model-2"))
        np.testing.assert_array_equal(_whole(sess, parts), want["part"])
        np.testing.assert_array_equal(_whole(sess, parts, opt, "m"), want["part/Adam"])
        np.testing.assert_array_equal(_whole(sess, parts, opt, "v"), want["part/Adam_1"])


def test_tf_restores_dtf_slices_onto_two_shards(tmp_path):
    path, want = _save_three_shards(tmp_path)
    out = run_tf("""
        parts = tf.get_variable("emb", shape=[7, 2], partitioner=tf.fixed_size_partitioner(2))
        step = tf.train.get_or_create_global_step()
        opt = tf.train.AdamOptimizer(0.1)
        opt.minimize(tf.reduce_sum(tf.concat(list(parts), 0)), global_step=step)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, sys.argv[1])
            whole = lambda ts: sess.run(tf.concat(ts, 0)).tolist()
            print(json.dumps({"emb": whole(list(parts)),
                              "emb/Adam": whole([opt.get_slot(p, "m") for p in parts]),
                              "emb/Adam_1": whole([opt.get_slot(p, "v") for p in parts])}))
        """, path)
    got = json.loads(out)
    for name, value in want.items():
        np.testing.assert_array_equal(np.asarray(got[name], np.float32), value, err_msg=name)


def test_a_slice_across_stored_slices_and_one_they_do_not_cover(tmp_path):
    from dtf.ops import state_ops

    whole = np.arange(8.0, dtype=np.float32).reshape(4, 2)
    prefix = str(tmp_path / "s")
    checkpoint_io.write(prefix, ["t", "t", "gap"], [whole[:2], whole[2:], whole[:1]],
                        ["4 2 0,2:-", "4 2 2,2:-", "4 2 0,1:-"])
    (across,) = state_ops.restore_v2(tf.constant(prefix), ["t"], ["4 2 1,2:1,1"], [tf.float32])
    (gap,) = state_ops.restore_v2(tf.constant(prefix), ["gap"], ["4 2 0,2:-"], [tf.float32])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(across), whole[1:3, 1:])
        with pytest.raises(tf.errors.NotFoundError, match="its slices do not cover it"):
            sess.run(gap)
