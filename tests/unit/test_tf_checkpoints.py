"""Checkpoints in TensorFlow's own V2 format: TF's files restore into dtf (fixtures written
by real TF: tests/fixtures/tf/make_fixtures.py), and dtf's restore into TF (checked with
real TF when DTF_TEST_TF_PYTHON is set)."""
import json
import os
import shutil

import numpy as np
import pytest

import dtf as tf
from dtf.state import checkpoint_io
from tests.tf_subprocess import run_tf

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf")
TF_CKPT = os.path.join(FIXTURES, "adam_ckpt")


def _tf_values():
    with np.load(os.path.join(FIXTURES, "adam_values.npz")) as d:
        return {k.replace("__", "/"): d[k] for k in d.files}


def test_reader_api_on_a_tf_checkpoint():
    want = _tf_values()
    path = tf.train.latest_checkpoint(TF_CKPT)
    assert path == os.path.join(TF_CKPT, "model-2")
    reader = tf.train.NewCheckpointReader(path)
    shapes = reader.get_variable_to_shape_map()
    assert sorted(shapes) == sorted(want)
    assert shapes["part"] == [5, 2] and shapes["dense/kernel/Adam_1"] == [3, 2]
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["counts"] == tf.int64 and dtypes["words"] == tf.string
    assert dtypes["dense/bias"] == tf.float32
    for name, value in want.items():
        got = reader.get_tensor(name)
        if value.dtype.kind == "S":
            assert got.tolist() == [b"alpha", b"", b"gamma\x00z"]
        else:
            np.testing.assert_array_equal(got, value)
    assert reader.has_tensor("global_step") and not reader.has_tensor("nope")
    assert tf.train.list_variables(TF_CKPT) == sorted((k, list(v.shape)) for k, v in want.items())
    assert tf.train.load_checkpoint(TF_CKPT).get_tensor("global_step") == 2
    assert tf.train.load_variable(TF_CKPT, "counts").tolist() == [[1, -2], [3, 1 << 40]]


def test_tf_checkpoint_with_adam_slots_restores_into_a_dtf_model_and_trains_on():
    want = _tf_values()
    rs = np.random.RandomState(0)
    x = tf.constant(rs.randn(4, 3).astype(np.float32))
    y = tf.constant(rs.randn(4, 2).astype(np.float32))
    w = tf.get_variable("dense/kernel", shape=[3, 2])
    b = tf.get_variable("dense/bias", shape=[2])
    tf.get_variable("words", shape=[3], dtype=tf.string, trainable=False)
    tf.get_variable("counts", shape=[2, 2], dtype=tf.int64, trainable=False)
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b + 15.0 - y))
    train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(TF_CKPT))
        for v in tf.global_variables():
            got = sess.run(v)
            if v.dtype == tf.string:
                assert got.tolist() == [b"alpha", b"", b"gamma\x00z"]
            else:
                np.testing.assert_array_equal(got, want[v.op.name], err_msg=v.op.name)
        sess.run(train)
        assert sess.run(step) == 3
        assert not np.array_equal(sess.run(w), want["dense/kernel"])


def test_restore_v2_reads_one_slice_of_a_partitioned_variable():
    from dtf.ops import state_ops

    prefix = os.path.join(TF_CKPT, "model-2")
    parts = state_ops.restore_v2(tf.constant(prefix), ["part", "part"], ["5 2 0,3:0,2", "5 2 3,2:-"],
                                 [tf.float32, tf.float32])
    with tf.Session() as sess:
        first, second = sess.run(parts)
    whole = _tf_values()["part"]
    np.testing.assert_array_equal(first, whole[:3])
    np.testing.assert_array_equal(second, whole[3:])


def _copy_fixture(tmp_path):
    dest = tmp_path / "ckpt"
    shutil.copytree(TF_CKPT, dest)
    return str(dest / "model-2")


@pytest.mark.parametrize("suffix,offset", [(".index", 40), (".index", -1),
                                           (".data-00000-of-00001", 5)])
def test_damaged_files_are_data_loss(tmp_path, suffix, offset):
    prefix = _copy_fixture(tmp_path)
    path = prefix + suffix
    raw = bytearray(open(path, "rb").read())
    raw[offset] ^= 0x5A
    open(path, "wb").write(bytes(raw))
    with pytest.raises(tf.errors.DataLossError):
        reader = tf.train.NewCheckpointReader(prefix)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)


def test_truncated_index_is_data_loss(tmp_path):
    prefix = _copy_fixture(tmp_path)
    raw = open(prefix + ".index", "rb").read()
    open(prefix + ".index", "wb").write(raw[:len(raw) // 2])
    with pytest.raises(tf.errors.DataLossError, match="model-2.index"):
        tf.train.NewCheckpointReader(prefix)


def test_dtf_writes_tf_format_byte_for_byte_as_tf_lays_it_out(tmp_path):
    # Same tensors in, same index out: TF's writer and dtf's agree on every byte.
    reader = tf.train.NewCheckpointReader(os.path.join(TF_CKPT, "model-2"))
    names = sorted(n for n in reader.get_variable_to_shape_map() if not n.startswith("part"))
    prefix = str(tmp_path / "m")
    checkpoint_io.write(prefix, names, [reader.get_tensor(n) for n in names])
    again = tf.train.NewCheckpointReader(prefix)
    for n in names:
        np.testing.assert_array_equal(again.get_tensor(n), reader.get_tensor(n))
    assert open(prefix + ".index", "rb").read()[:2] == b"\x00\x00"  # the header entry, key ""


def test_dtf_earlier_json_checkpoints_still_restore(tmp_path):
    import struct
    import zlib

    raw = np.array([1.5, -2.0], np.float32).tobytes()
    words = b"".join(struct.pack("<I", len(s)) + s for s in (b"ab", b"c"))
    (tmp_path / "old.data-00000-of-00001").write_bytes(raw + words)
    index = {"format": "dtf-checkpoint-v1", "data_files": ["old.data-00000-of-00001"],
             "tensors": {"v": {"dtype": "float32", "shape": [2], "shard": 0, "offset": 0,
                               "length": 8, "crc32": zlib.crc32(raw)},
                         "s": {"dtype": "string", "shape": [2], "shard": 0, "offset": 8,
                               "length": len(words), "crc32": zlib.crc32(words)}}}
    (tmp_path / "old.index").write_text(json.dumps(index))
    v = tf.Variable([0.0, 0.0], name="v")
    s = tf.Variable([b"", b""], name="s")
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, str(tmp_path / "old"))
        assert sess.run(v).tolist() == [1.5, -2.0]
        assert sess.run(s).tolist() == [b"ab", b"c"]
    assert tf.train.list_variables(str(tmp_path / "old")) == [("s", [2]), ("v", [2])]


def _dtf_adam_checkpoint(tmp_path):
    rs = np.random.RandomState(1)
    x = tf.constant(rs.randn(4, 3).astype(np.float32))
    w = tf.get_variable("dense/kernel", initializer=rs.randn(3, 2).astype(np.float32))
    tf.get_variable("words", initializer=tf.constant([b"x", b"", b"yz\xff"]), trainable=False)
    tf.get_variable("counts", initializer=np.array([7, -(1 << 40)], np.int64), trainable=False)
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
    train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = saver.save(sess, str(tmp_path / "model"), global_step=step)
        values = {v.op.name: sess.run(v) for v in tf.global_variables()}
    return path, values


TF_RESTORE = """
prefix = sys.argv[1]
reader = tf.train.NewCheckpointReader(prefix)
shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
with tf.Graph().as_default():
    variables = [tf.get_variable(n, shape=shapes[n], dtype=dtypes[n]) for n in sorted(shapes)]
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        out = {v.op.name: sess.run(v) for v in variables}
print(json.dumps({k: [x.decode("latin-1") for x in v.reshape(-1)] if v.dtype == object
                  else v.tolist() for k, v in out.items()}))
"""


def test_tf_restores_a_dtf_checkpoint_with_adam_slots(tmp_path):
    path, values = _dtf_adam_checkpoint(tmp_path)
    got = json.loads(run_tf(TF_RESTORE, path))
    assert sorted(got) == sorted(values)
    assert sorted(got) == ["beta1_power", "beta2_power", "counts", "dense/kernel",
                           "dense/kernel/Adam", "dense/kernel/Adam_1", "global_step", "words"]
    for name, value in values.items():
        if value.dtype == object:
            assert [s.encode("latin-1") for s in got[name]] == value.tolist()
        else:
            np.testing.assert_array_equal(np.asarray(got[name], value.dtype), value, err_msg=name)


def test_tf_reads_dtf_slices_and_merged_shards(tmp_path):
    whole = np.arange(200.0, dtype=np.float32).reshape(100, 2)
    a, b = str(tmp_path / "m-00000-of-00002"), str(tmp_path / "m-00001-of-00002")
    checkpoint_io.write(a, ["part", "part", "c"], [whole[:70], whole[70:], np.int32(3)],
                        ["100 2 0,70:-", "100 2 70,30:-", ""])
    checkpoint_io.write(b, ["d"], [np.array([b"q"], dtype=object)])
    checkpoint_io.merge([a, b], str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["m.data-00000-of-00002", "m.data-00001-of-00002",
                                            "m.index"]
    reader = tf.train.NewCheckpointReader(str(tmp_path / "m"))
    np.testing.assert_array_equal(reader.get_tensor("part"), whole)
    out = run_tf("""
        r = tf.train.NewCheckpointReader(sys.argv[1])
        print(json.dumps({"part": r.get_tensor("part").tolist(), "c": int(r.get_tensor("c")),
                          "d": [x.decode() for x in r.get_tensor("d")]}))
        """, str(tmp_path / "m"))
    assert json.loads(out) == {"part": whole.tolist(), "c": 3, "d": ["q"]}


def test_many_tensors_span_several_index_blocks_and_big_ones_checksum(tmp_path):
    # > 256 KiB of index entries: several data blocks and a real index block; a 1 MiB
    # tensor takes the compiled CRC-32C path.
    names = [f"layer_{i:05d}/{'w' * 40}" for i in range(6000)]
    values = [np.full([2], i, np.int32) for i in range(6000)]
    names.append("big")
    values.append(np.arange(1 << 18, dtype=np.float32))
    prefix = str(tmp_path / "many")
    checkpoint_io.write(prefix, names, values)
    assert os.path.getsize(prefix + ".index") > 300_000
    reader = tf.train.NewCheckpointReader(prefix)
    assert len(reader.get_variable_to_shape_map()) == 6001
    assert reader.get_tensor("layer_04321/" + "w" * 40).tolist() == [4321, 4321]
    np.testing.assert_array_equal(reader.get_tensor("big"), values[-1])
    out = run_tf("""
        r = tf.train.NewCheckpointReader(sys.argv[1])
        m = r.get_variable_to_shape_map()
        print(json.dumps([len(m), r.get_tensor("layer_05999/" + "w" * 40).tolist(),
                          float(r.get_tensor("big").sum())]))
        """, prefix)
    assert json.loads(out) == [6001, [5999, 5999], float(values[-1].sum())]


def test_a_tf_partitioned_variable_restores_whole_into_one_variable():
    whole = tf.Variable(np.zeros([5, 2], np.float32), name="whole")
    saver = tf.train.Saver({"part": whole, "part/Adam": tf.Variable(np.zeros([5, 2], np.float32))})
    with tf.Session() as sess:
        saver.restore(sess, os.path.join(TF_CKPT, "model-2"))
        np.testing.assert_array_equal(sess.run(whole), _tf_values()["part"])


def test_a_tf_sharded_checkpoint_reads_across_its_data_files():
    prefix = os.path.join(FIXTURES, "sharded_ckpt", "model")
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_shape_map() == {"a": [2, 3], "b": [2]}
    assert reader.get_tensor("a").tolist() == [[0, 1, 2], [3, 4, 5]]
    assert reader.get_tensor("b").tolist() == [b"x", b"yz"]
    a = tf.Variable(np.zeros([2, 3], np.float32), name="a")
    with tf.Session() as sess:
        tf.train.Saver([a]).restore(sess, prefix)
        assert sess.run(a)[1, 2] == 5


def test_a_mangled_index_is_data_loss_never_another_error():
    from dtf.state import sstable, tensor_bundle
    from tests.mangle import mangled

    prefix = os.path.join(TF_CKPT, "model-2")
    for raw in mangled(open(prefix + ".index", "rb").read(), 300, seed=1):
        try:
            reader = tensor_bundle.BundleReader(prefix, sstable.parse(raw, "x"))
            for name in reader.names():
                reader.read(name)
        except tf.errors.DataLossError:
            pass


def test_a_dtype_dtf_lacks_is_named(tmp_path):
    from dtf.state import sstable, tensor_bundle

    entry = tensor_bundle.BundleEntryProto(dtype=14, size=2)  # DT_BFLOAT16
    entry.shape.dim.add(size=1)
    prefix = str(tmp_path / "bf16")
    with open(prefix + ".index", "wb") as f:
        f.write(sstable.build([(b"", tensor_bundle.header(1)), (b"w", entry.SerializeToString())]))
    open(prefix + ".data-00000-of-00001", "wb").write(b"\0\0")
    reader = tf.train.NewCheckpointReader(prefix)
    assert reader.get_variable_to_shape_map() == {"w": [1]}
    with pytest.raises(tf.errors.UnimplementedError, match="w: TensorFlow DataType DT_BFLOAT16"):
        reader.get_tensor("w")
