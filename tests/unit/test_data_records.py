"""TFRecord files, Example protos and their parsing, against files TensorFlow wrote
(tests/data/tf_examples.tfrecord*, made by tests/data/make_tfrecord_fixture.py)."""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

import dtf as tf
from dtf.io.example_pb import BytesList, Example, Feature, Features, FloatList, Int64List

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
PLAIN = os.path.join(DATA, "tf_examples.tfrecord")
GZ = PLAIN + ".gz"


def expected():
    """The fixture's examples, rebuilt as its script built them."""
    rng = np.random.RandomState(27)
    for i in range(6):
        image = rng.randint(0, 256, size=(4, 4), dtype=np.uint8)
        yield {"image": image, "label": i - 2, "weights": np.float32([0.5 * i, -1.25, 3.0 + i]),
               "name": f"ex{i}".encode()}


def example_of(e):
    return Example(features=Features(feature={
        "image": Feature(bytes_list=BytesList(value=[e["image"].tobytes()])),
        "label": Feature(int64_list=Int64List(value=[e["label"]])),
        "weights": Feature(float_list=FloatList(value=list(e["weights"]))),
        "name": Feature(bytes_list=BytesList(value=[e["name"]]))}))


FEATURES = {"image": tf.FixedLenFeature([], tf.string), "label": tf.FixedLenFeature([], tf.int64),
            "weights": tf.FixedLenFeature([3], tf.float32), "name": tf.FixedLenFeature([], tf.string)}


def test_tf_written_records_parse_as_examples():
    records = list(tf.python_io.tf_record_iterator(PLAIN))
    assert records == list(tf.io.tf_record_iterator(GZ, tf.io.TFRecordOptions("GZIP")))
    for record, want in zip(records, expected(), strict=True):
        ex = Example.FromString(record)
        f = ex.features.feature
        assert f["label"].int64_list.value == [want["label"]]
        np.testing.assert_array_equal(np.float32(f["weights"].float_list.value), want["weights"])
        assert f["image"].bytes_list.value[0] == want["image"].tobytes()
        # Our encoding is byte for byte TF's (deterministic, sorted map keys).
        assert example_of(want).SerializeToString() == record


def test_our_writer_writes_tfs_bytes(tmp_path):
    path = str(tmp_path / "ours.tfrecord")
    with tf.python_io.TFRecordWriter(path) as w:
        for e in expected():
            w.write(example_of(e).SerializeToString())
    assert open(path, "rb").read() == open(PLAIN, "rb").read()
    gz = str(tmp_path / "ours.tfrecord.gz")
    with tf.io.TFRecordWriter(gz, tf.io.TFRecordOptions(compression_type="GZIP")) as w:
        for e in expected():
            w.write(example_of(e).SerializeToString())
    assert gzip.open(gz).read() == gzip.open(GZ).read()
    zl = str(tmp_path / "ours.tfrecord.z")
    with tf.io.TFRecordWriter(zl, "ZLIB") as w:
        w.write(b"abc")
        w.write(b"")
    assert list(tf.io.tf_record_iterator(zl, "ZLIB")) == [b"abc", b""]


def test_corrupted_record_is_data_loss(tmp_path):
    data = bytearray(open(PLAIN, "rb").read())
    data[20] ^= 0xFF
    bad = tmp_path / "bad.tfrecord"
    bad.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.python_io.tf_record_iterator(str(bad)))


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecord_dataset_parse_decode_raw_batch(compression):
    path = GZ if compression else PLAIN
    with tf.Graph().as_default():
        def parse(record):
            f = tf.parse_single_example(record, FEATURES)
            image = tf.reshape(tf.decode_raw(f["image"], tf.uint8), [4, 4])
            return image, f["label"], f["weights"]
        ds = tf.data.TFRecordDataset(path, compression_type=compression).map(parse).batch(4)
        assert ds.output_shapes[0].as_list() == [None, 4, 4]
        nxt = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            batches = [sess.run(nxt), sess.run(nxt)]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(nxt)
    want = list(expected())
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), [w["image"] for w in want])
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), [w["label"] for w in want])
    np.testing.assert_array_equal(np.concatenate([b[2] for b in batches]), [w["weights"] for w in want])


def test_parse_example_batch_defaults_and_errors():
    want = list(expected())
    records = [example_of(w).SerializeToString() for w in want[:3]]
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        out = tf.parse_example(s, {"label": tf.FixedLenFeature([], tf.int64),
                                   "missing": tf.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0]),
                                   "weights": tf.FixedLenSequenceFeature([], tf.float32, allow_missing=True)})
        required = tf.io.parse_single_example(s[0], {"nope": tf.FixedLenFeature([], tf.int64)})
        wrong = tf.parse_single_example(s[0], {"weights": tf.FixedLenFeature([2], tf.float32)})
        assert out["missing"].shape.as_list() == [None, 2]
        with tf.Session() as sess:
            got = sess.run(out, {s: records})
            np.testing.assert_array_equal(got["label"], [-2, -1, 0])
            np.testing.assert_array_equal(got["missing"], [[1, 2]] * 3)
            np.testing.assert_array_equal(got["weights"], [w["weights"] for w in want[:3]])
            with pytest.raises(tf.errors.InvalidArgumentError, match="required"):
                sess.run(required, {s: records})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Values size: 3"):
                sess.run(wrong, {s: records})
    with tf.Graph().as_default(), pytest.raises(ValueError, match="FixedLenFeature"):
        tf.parse_single_example(tf.constant(b""), {"v": ("var_len", tf.int64)})


def test_decode_raw_endianness_and_errors():
    with tf.Graph().as_default():
        b = tf.placeholder(tf.string, [None])
        le = tf.decode_raw(b, tf.int32)
        be = tf.decode_raw(b, tf.int32, little_endian=False)
        with tf.Session() as sess:
            data = [np.int32([1, 2]).tobytes(), np.int32([3, -4]).tobytes()]
            np.testing.assert_array_equal(sess.run(le, {b: data}), [[1, 2], [3, -4]])
            np.testing.assert_array_equal(sess.run(be, {b: data}),
                                          np.int32([[1, 2], [3, -4]]).byteswap())
            with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
                sess.run(le, {b: [b"abcd", b"abcdefgh"]})


def test_text_fixed_length_and_list_files(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\r\nthree")
    (tmp_path / "b.txt").write_bytes(b"four\n")
    (tmp_path / "r.bin").write_bytes(b"HH" + b"abcdefgh" + b"F")
    with tf.Graph().as_default():
        lines = tf.data.TextLineDataset([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
        fixed = tf.data.FixedLengthRecordDataset(str(tmp_path / "r.bin"), 3, header_bytes=2, footer_bytes=1)
        files = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
        per_file = files.interleave(tf.data.TextLineDataset, cycle_length=2)
        none = tf.data.Dataset.list_files(str(tmp_path / "*.nothing"))
        its = [d.make_one_shot_iterator().get_next() for d in (lines, fixed, files, per_file)]
        none_it = none.make_initializable_iterator()
        with tf.Session() as sess:
            def drain(t):
                out = []
                while True:
                    try:
                        out.append(sess.run(t))
                    except tf.errors.OutOfRangeError:
                        return out
            assert drain(its[0]) == [b"one", b"two", b"three", b"four"]
            assert drain(its[1]) == [b"abc", b"def"]
            assert [os.path.basename(f.decode()) for f in drain(its[2])] == ["a.txt", "b.txt"]
            assert drain(its[3]) == [b"one", b"four", b"two", b"three"]
            with pytest.raises(tf.errors.InvalidArgumentError, match="No files matched"):
                sess.run(none_it.initializer)


def test_missing_file_is_not_found():
    with tf.Graph().as_default():
        nxt = tf.data.TFRecordDataset("/nonexistent/x.tfrecord").make_one_shot_iterator().get_next()
        with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError):
            sess.run(nxt)


def _ld(tag, payload):
    """A length-delimited field (payloads here are under 128 bytes)."""
    return bytes([tag, len(payload)]) + payload


def test_unpacked_and_unusual_encodings_take_the_generic_reader():
    import struct

    from dtf.io.example_wire import example_features

    floats = _ld(0x12, b"".join(b"\x0d" + struct.pack("<f", v) for v in (1.5, -2.0)))  # unpacked
    ints = _ld(0x1A, b"\x08\x05\x08" + bytes([0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]))
    entries = (_ld(0x0A, _ld(0x0A, b"f") + _ld(0x12, floats))
               + _ld(0x0A, _ld(0x0A, b"i") + _ld(0x12, ints))
               + _ld(0x0A, _ld(0x0A, b"e") + _ld(0x12, b"")))
    data = _ld(0x0A, entries) + b"\x10\x07"  # plus an unknown varint field 2
    feats = example_features(data)
    np.testing.assert_array_equal(feats["f"][1], np.float32([1.5, -2.0]))
    assert feats["i"] == (3, [5, -2]) and feats["e"] == (0, [])
    ex = Example.FromString(data)
    assert list(ex.features.feature["i"].int64_list.value) == [5, -2]
    assert list(ex.features.feature["f"].float_list.value) == [1.5, -2.0]
    with tf.Graph().as_default():
        out = tf.parse_single_example(tf.constant(data), {
            "f": tf.FixedLenFeature([2], tf.float32), "i": tf.FixedLenFeature([2], tf.int64)})
        with tf.Session() as sess:
            got = sess.run(out)
    np.testing.assert_array_equal(got["i"], [5, -2])
    with tf.Graph().as_default():
        bad = tf.parse_single_example(tf.constant(b"\x0a\x05abc"), {"f": tf.FixedLenFeature([], tf.int64)})
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="parse"):
            sess.run(bad)


def test_sequence_example_required_feature_list():
    from dtf.io.example_pb import SequenceExample

    ex = SequenceExample()
    ex.context.feature["n"].int64_list.value.append(1)
    with tf.Graph().as_default():
        _, seq = tf.parse_single_sequence_example(
            tf.constant(ex.SerializeToString()),
            sequence_features={"x": tf.FixedLenSequenceFeature([], tf.float32)})
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Feature list 'x'"):
            sess.run(seq)


def test_decode_csv_errors():
    with tf.Graph().as_default():
        line = tf.placeholder(tf.string, [])
        cols = tf.decode_csv(line, [[0], tf.constant([], tf.float32)])
        with tf.Session() as sess:
            assert [v.item() for v in sess.run(cols, {line: "4,0.5"})] == [4, 0.5]
            for bad, match in (("1", "Expect 2 fields but have 1"), ("1,", "required but missing"),
                               ("x,1", "not a valid int")):
                with pytest.raises(tf.errors.InvalidArgumentError, match=match):
                    sess.run(cols, {line: bad})


def _serialized_example(**features):
    return Example(features=tf.train.Features(feature=features)).SerializeToString()


# Short builders for the layout tests' many records: (example, bytes, int64, float).
EXAMPLE_BUILDERS = (
    _serialized_example,
    lambda v: tf.train.Feature(bytes_list=tf.train.BytesList(value=v)),
    lambda v: tf.train.Feature(int64_list=tf.train.Int64List(value=v)),
    lambda v: tf.train.Feature(float_list=tf.train.FloatList(value=v)),
)


def test_records_of_one_length_but_another_layout_are_walked_afresh():
    """Parsing reuses the layout of the last record of the same length: records that
    differ only outside their values must still read as what they are."""
    from dtf.io.example_wire import _example_features_generic, example_features

    example, b, i, f = EXAMPLE_BUILDERS

    records = [example(ab=b([b"xyz0"]), n=i([1])), example(ab=b([b"xyz1"]), n=i([2])),
               example(ba=b([b"xyz1"]), n=i([2])),          # another key, same length
               example(ab=b([b"xy", b"z"]), n=i([300])),      # two values, a longer varint
               example(ab=b([b"xyz1"]), n=i([127])),
               example(ab=f([1.0]), n=i([5])), example(ab=b([b"\x0a\x05"] * 2), n=i([4])),
               example(ab=b([b"xyz9"]), n=i([9])), example(ab=b([]), n=i([])), example()]
    for data in records + records[::-1]:
        got, want = example_features(data), _example_features_generic(data)
        assert got.keys() == want.keys()
        for key in want:
            assert got[key][0] == want[key][0]
            np.testing.assert_array_equal(np.asarray(got[key][1], dtype=object),
                                          np.asarray(want[key][1], dtype=object))


def test_parse_single_example_kernel_agrees_with_the_reference_over_layouts():
    """The kernel works out per layout where its values are; records of one length with
    other layouts, missing features, other kinds and counts must come out as the
    reference function gives them (values, defaults or the same error class)."""
    from dtf.framework import errors
    from dtf.kernels.reference import parsing

    example, b, i, f = EXAMPLE_BUILDERS

    records = [example(s=b([b"abcd"]), n=i([1]), x=f([0.5])), example(s=b([b"wxyz"]), n=i([2]), x=f([1.5])),
               example(t=b([b"abcd"]), n=i([1]), x=f([0.5])), example(s=b([b"ab", b"c"]), n=i([300]), x=f([2.0])),
               example(s=b([b"abcd"]), n=i([1, 2]), x=f([0.5])), example(s=b([b"abcd"]), n=f([1.0]), x=f([0.5])),
               example(s=b([b"abcd"]), n=i([-7]), x=f([0.5, 1.0])), example(n=i([1]), x=f([0.5])),
               b"\x0a\x03\x0a\x01", example(s=b([b"abcd"]), n=i([5]), x=f([0.5]))]

    class Node:
        attrs = {"dense_keys": ["s", "n", "x"], "Tdense": [tf.string, tf.int64, tf.float32],
                 "dense_shapes": [[], [], []], "sparse_keys": [], "sparse_types": [],
                 "Nsparse": 0, "Ndense": 3}

    kernel = parsing._parse_single_example_kernel(Node)
    defaults = [np.asarray(b"default", dtype=object), np.zeros(0, np.int64), np.asarray(9.0, np.float32)]
    for data in records + records[::-1]:
        serialized = np.empty((), dtype=object)
        serialized[()] = data
        try:
            want = parsing.parse_single_example(Node.attrs, serialized, *defaults)
        except errors.OpError as e:
            with pytest.raises(type(e)):
                kernel(None, serialized, *defaults)
            continue
        got = kernel(None, serialized, *defaults)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape and g[()] == w[()]
