"""tf.summary: summary ops, the hand-written protos, event files written and read back."""
import bisect
import glob
import os
import struct
import sys
import time

import numpy as np
import pytest

import dtf as tf
import dtf.summary
from dtf.framework import errors
from dtf.framework.op_registry import get_gradient_function
from dtf.kernels.cpu.summary import DEFAULT_BUCKET_LIMITS
from dtf.summary import proto
from dtf.summary.records import crc32c, encode_record, masked_crc32c, read_records

S = dtf.summary
DBL_MAX = sys.float_info.max


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    S.FileWriterCache.clear()


def run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def values_of(serialized):
    return list(S.Summary.FromString(serialized).value)


def event_files(logdir):
    return sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))


# -- ops -------------------------------------------------------------------------------------

def test_scalar_op_name_tag_and_value():
    x = tf.placeholder(tf.float32, [None])
    s = S.scalar("loss", tf.reduce_mean(x))
    assert s.op.name == "loss" and s.op.type == "ScalarSummary"
    assert s.dtype == tf.string and s.shape.as_list() == []
    (v,) = values_of(run(s, {x: [1.0, 2.0, 4.5]}))
    assert v.tag == "loss" and v.WhichOneof("value") == "simple_value"
    assert v.simple_value == pytest.approx(2.5)


def test_tags_follow_name_scopes_families_and_uniquing():
    a = S.scalar("loss", 1.0)
    b = S.scalar("loss", 2)  # second use gets a unique scope, hence tag
    with tf.name_scope("train"):
        c = S.scalar("loss", np.float64(3.0))
    d = S.scalar("acc", 0.5, family="eval")
    e = S.scalar("my loss!", 4.0)
    assert [t.op.name for t in (a, b, c, d, e)] == ["loss", "loss_1", "train/loss", "eval/acc", "my_loss_"]
    merged = run(S.merge([a, b, c, d, e]))
    assert [(v.tag, v.simple_value) for v in values_of(merged)] == [
        ("loss", 1.0), ("loss_1", 2.0), ("train/loss", 3.0), ("eval/eval/acc", 0.5), ("my_loss_", 4.0)]


def test_scalar_zero_value_is_serialized():
    (v,) = values_of(run(S.scalar("z", 0.0)))
    assert v.HasField("simple_value") and v.simple_value == 0.0


def test_scalar_rejects_non_numeric_and_shape_mismatch():
    with pytest.raises(TypeError):
        S.scalar("s", tf.constant("text"))
    s = S.scalar("vec", tf.constant([1.0, 2.0]))
    with pytest.raises(errors.InvalidArgumentError, match=r"tags and values not the same shape: \[\] != \[2\] \(tag 'vec'\)"):
        run(s)


def _tf_histogram(values):
    """TF's Histogram::Add + EncodeToProto(preserve_zero_buckets=False), written out plainly."""
    limits = list(DEFAULT_BUCKET_LIMITS)
    counts = [0.0] * len(limits)
    for v in values:
        counts[bisect.bisect_right(limits, v)] += 1.0
    out, i = [], 0
    while i < len(counts):
        end, count = limits[i], counts[i]
        i += 1
        if count <= 0.0:
            while i < len(counts) and counts[i] <= 0.0:
                end, count = limits[i], counts[i]
                i += 1
        out.append((end, count))
    return out


def test_default_bucket_limits_match_tf():
    lim = DEFAULT_BUCKET_LIMITS
    assert lim[0] == -DBL_MAX and lim[-1] == DBL_MAX
    assert np.all(np.diff(lim) > 0)
    mid = len(lim) // 2
    assert lim[mid] == 0.0 and lim[mid + 1] == 1e-12 and lim[mid - 1] == -1e-12
    np.testing.assert_array_equal(lim[:mid], -lim[mid + 1:][::-1])  # mirrored
    positive = lim[mid + 1:-1]
    np.testing.assert_allclose(positive[1:] / positive[:-1], 1.1)
    assert positive[-1] < 1e20 <= positive[-1] * 1.1


def test_histogram_buckets_and_stats_like_tf():
    data = np.array([[1.0, 2.0, -3.0, 0.0], [1.0, 1e-13, 250.0, -1e-12]], np.float32)
    x = tf.placeholder(tf.float32, [2, 4])
    with tf.name_scope("layer"):
        h = S.histogram("weights", x)
    assert h.op.name == "layer/weights" and h.op.type == "HistogramSummary"
    (v,) = values_of(run(h, {x: data}))
    assert v.tag == "layer/weights" and v.WhichOneof("value") == "histo"
    flat = data.astype(np.float64).ravel()
    histo = v.histo
    assert (histo.min, histo.max, histo.num) == (flat.min(), flat.max(), 8.0)
    assert histo.sum == pytest.approx(flat.sum()) and histo.sum_squares == pytest.approx((flat ** 2).sum())
    assert list(zip(histo.bucket_limit, histo.bucket)) == _tf_histogram(flat)
    assert sum(histo.bucket) == 8


def test_value_on_a_bucket_limit_goes_to_the_next_bucket():
    limit = float(DEFAULT_BUCKET_LIMITS[len(DEFAULT_BUCKET_LIMITS) // 2 + 5])
    (v,) = values_of(run(S.histogram("edge", tf.constant([limit], tf.float64))))
    counted = [lim for lim, c in zip(v.histo.bucket_limit, v.histo.bucket) if c]
    assert counted == [DEFAULT_BUCKET_LIMITS[len(DEFAULT_BUCKET_LIMITS) // 2 + 6]]


def test_histogram_of_integers_and_empty_input():
    (v,) = values_of(run(S.histogram("ints", tf.constant([3, 3, 7], tf.int64))))
    assert list(zip(v.histo.bucket_limit, v.histo.bucket)) == _tf_histogram([3, 3, 7])
    (e,) = values_of(run(S.histogram("empty", tf.zeros([0]))))
    assert (e.histo.min, e.histo.max, e.histo.num) == (DBL_MAX, -DBL_MAX, 0.0)
    assert list(e.histo.bucket_limit) == [DBL_MAX] and list(e.histo.bucket) == [0.0]


@pytest.mark.parametrize("bad, word", [(np.nan, "Nan"), (np.inf, "Infinity")])
def test_histogram_rejects_non_finite(bad, word):
    x = tf.placeholder(tf.float32, [2])
    h = S.histogram("h", x)
    with pytest.raises(errors.InvalidArgumentError, match=f"{word} in summary histogram for: h"):
        run(h, {x: [1.0, bad]})


def test_merge_all_collects_summaries_collection():
    assert S.merge_all() is None
    a = S.scalar("a", 1.0)
    S.scalar("hidden", 2.0, collections=[])
    S.scalar("other", 3.0, collections=["mine"])
    h = S.histogram("h", tf.constant([1.0, 2.0]))
    assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a, h]
    merged = S.merge_all()
    assert merged.op.name == "Merge/MergeSummary" and merged.op.type == "MergeSummary"
    assert [v.tag for v in values_of(run(merged))] == ["a", "h"]
    assert [v.tag for v in values_of(run(S.merge_all("mine", name="m")))] == ["other"]
    assert merged not in tf.get_collection(tf.GraphKeys.SUMMARIES)


def test_merge_duplicate_tag_and_empty_list():
    a = S.scalar("dup", 1.0, collections=[])
    with pytest.raises(errors.InvalidArgumentError, match="Duplicate tag dup found in summary inputs"):
        run(S.merge([a, a]))
    with pytest.raises(ValueError, match="shorter than minimum length 1"):
        S.merge([])


@pytest.mark.parametrize("op_type", ["ScalarSummary", "HistogramSummary", "MergeSummary"])
def test_summaries_are_not_differentiable(op_type):
    assert get_gradient_function(op_type) is None


# -- protos ----------------------------------------------------------------------------------

def test_event_roundtrip_negative_step_and_oneof():
    ev = proto.Event(wall_time=12.5, step=-3, summary=S.Summary(value=[S.Summary.Value(tag="t", simple_value=0.25)]))
    back = proto.Event.FromString(ev.SerializeToString())
    assert back == ev and back.step == -3 and back.WhichOneof("what") == "summary"
    back.file_version = "x"  # setting another member of the oneof clears summary
    assert back.WhichOneof("what") == "file_version" and not back.HasField("summary")
    assert proto.Event().WhichOneof("what") is None and proto.Event().SerializeToString() == b""


def test_repeated_add_and_lazy_submessages():
    s = S.Summary()
    s.value.add(tag="a", simple_value=1.0)
    s.value.add(tag="b").histo.bucket.extend([1.0, 2.0])
    back = S.Summary.FromString(s.SerializeToString())
    assert [v.tag for v in back.value] == ["a", "b"] and list(back.value[1].histo.bucket) == [1.0, 2.0]
    ev = proto.Event()
    ev.summary.value.add(tag="late", simple_value=2.0)  # mutating a sub-message sets it
    assert ev.WhichOneof("what") == "summary"


def _len_field(number, payload):
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_decoder_skips_unknown_fields_and_reads_unpacked_doubles():
    unknown = _len_field(8, b"\x08\x01") + b"\x98\x06\x05" + b"\x55" + bytes(4)  # tensor, varint, fixed32
    unpacked = b"".join(b"\x31" + struct.pack("<d", x) for x in (1.5, 2.5))  # bucket_limit, not packed
    data = _len_field(1, _len_field(1, b"t") + unknown) + _len_field(1, _len_field(1, b"u") + _len_field(5, unpacked))
    parsed = S.Summary.FromString(data)
    assert parsed.value[0].tag == "t" and parsed.value[1].histo.bucket_limit == [1.5, 2.5]
    with pytest.raises(proto.DecodeError):
        S.Summary.FromString(b"\x0a\x05ab")


def test_crc32c_known_values():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA  # RFC 3720 test vector
    assert masked_crc32c(b"") == 0xA282EAD8


# -- writer and reader -----------------------------------------------------------------------

def _write_training_run(logdir):
    x = tf.placeholder(tf.float32, [None])
    S.scalar("loss", tf.reduce_mean(x))
    S.histogram("x", x)
    merged = S.merge_all()
    writer = S.FileWriter(logdir, tf.get_default_graph())
    with tf.Session() as sess:
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: np.arange(4, dtype=np.float32) + step}), step)
    writer.add_session_log(S.SessionLog(status=S.SessionLog.STOP), global_step=3)
    writer.close()
    return writer


def test_file_writer_roundtrip(tmp_path):
    t0 = int(time.time())
    writer = _write_training_run(str(tmp_path))
    (path,) = event_files(str(tmp_path))
    assert writer.get_logdir() == str(tmp_path)
    stamp, host = os.path.basename(path).split(".")[3:5]
    assert len(stamp) == 10 and t0 <= int(stamp) <= time.time() and host
    events = list(S.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 0
    assert events[1].WhichOneof("what") == "graph_def"
    graph = proto.GraphDef.FromString(events[1].graph_def)
    nodes = {n.name: n for n in graph.node}
    assert nodes["loss"].op == "ScalarSummary" and list(nodes["loss"].input) == ["loss/tags", "Mean"]
    summaries = [e for e in events if e.WhichOneof("what") == "summary"]
    assert [e.step for e in summaries] == [0, 1, 2]
    for step, e in enumerate(summaries):
        loss, hist = e.summary.value
        assert (loss.tag, loss.simple_value) == ("loss", 1.5 + step)
        assert hist.tag == "x" and hist.histo.num == 4 and hist.histo.min == step
    assert events[-1].session_log.status == S.SessionLog.STOP and events[-1].step == 3
    assert all(e.wall_time >= t0 for e in events)


def test_reader_detects_corruption_and_truncation(tmp_path):
    _write_training_run(str(tmp_path))
    (path,) = event_files(str(tmp_path))
    data = bytearray(open(path, "rb").read())
    first_len = struct.unpack("<Q", data[:8])[0]
    bad = bytearray(data)
    bad[12 + first_len + 16 + 20] ^= 0x01  # a byte inside the second record's payload
    open(path, "wb").write(bytes(bad))
    it = S.summary_iterator(path)
    assert next(it).file_version == "brain.Event:2"
    with pytest.raises(errors.DataLossError, match="corrupted record"):
        list(it)
    bad = bytearray(data)
    bad[3] ^= 0x40  # the length field, checked by its own CRC
    open(path, "wb").write(bytes(bad))
    with pytest.raises(errors.DataLossError, match="corrupted record at 0"):
        list(S.summary_iterator(path))
    open(path, "wb").write(bytes(data[:-3]))
    with pytest.raises(errors.DataLossError, match="truncated record"):
        list(S.summary_iterator(path))


def test_record_framing(tmp_path):
    rec = encode_record(b"hello")
    assert struct.unpack("<Q", rec[:8])[0] == 5 and rec[12:17] == b"hello"
    assert struct.unpack("<I", rec[17:])[0] == masked_crc32c(b"hello")
    p = tmp_path / "r"
    p.write_bytes(rec + encode_record(b"") + encode_record(b"x" * 1000))
    assert list(read_records(str(p))) == [b"hello", b"", b"x" * 1000]


def test_flush_reopen_close_and_suffix(tmp_path):
    logdir = str(tmp_path)
    with S.FileWriter(logdir, filename_suffix=".v1", flush_secs=1000) as writer:
        writer.add_summary(S.Summary(value=[S.Summary.Value(tag="a", simple_value=1.0)]), 1)
        writer.flush()
        (path,) = event_files(logdir)
        assert path.endswith(".v1")
        assert [e.step for e in S.summary_iterator(path)] == [0, 1]
    writer.add_summary(S.Summary(value=[S.Summary.Value(tag="dropped", simple_value=1.0)]), 2)
    writer.reopen()
    writer.add_summary(S.Summary(value=[S.Summary.Value(tag="b", simple_value=2.0)]).SerializeToString(), 3)
    writer.close()
    files = event_files(logdir)
    assert len(files) == 2
    tags = [v.tag for f in files for e in S.summary_iterator(f) for v in e.summary.value]
    assert sorted(tags) == ["a", "b"]


def test_background_thread_flushes_without_new_events(tmp_path):
    writer = S.FileWriter(str(tmp_path), flush_secs=0.2)
    writer.add_summary(S.Summary(value=[S.Summary.Value(tag="a", simple_value=1.0)]), 5)
    (path,) = event_files(str(tmp_path))
    deadline = time.time() + 5
    while time.time() < deadline and len(list(S.summary_iterator(path))) < 2:
        time.sleep(0.05)
    assert [e.step for e in S.summary_iterator(path)] == [0, 5]
    writer.close()


def test_many_events_through_a_small_queue(tmp_path):
    writer = S.FileWriter(str(tmp_path), max_queue=2)
    for step in range(200):
        writer.add_summary(S.Summary(value=[S.Summary.Value(tag="s", simple_value=step)]), step)
    writer.close()
    (path,) = event_files(str(tmp_path))
    events = list(S.summary_iterator(path))[1:]
    assert [e.summary.value[0].simple_value for e in events] == list(range(200))


def test_file_writer_cache(tmp_path):
    a = S.FileWriterCache.get(str(tmp_path))
    assert S.FileWriterCache.get(str(tmp_path)) is a
    S.FileWriterCache.clear()
    assert S.FileWriterCache.get(str(tmp_path)) is not a


def test_tensorboard_reads_the_file_when_installed(tmp_path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    _write_training_run(str(tmp_path))
    acc = ea.EventAccumulator(str(tmp_path))
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(0, 1.5), (1, 2.5), (2, 3.5)]
    assert acc.Histograms("x")[-1].histogram_value.num == 4
