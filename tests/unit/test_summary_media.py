"""tf.summary.image/audio/text/tensor_summary through a FileWriter, their errors, and
FileWriter.add_run_metadata (TF's goldens cover the Summary contents)."""
from __future__ import annotations

import glob

import numpy as np
import pytest

import dtf as tf
from dtf.summary import summary_iterator
from dtf.summary.run_metadata import RunMetadataProto


def _events(logdir):
    path = glob.glob(f"{logdir}/events.*")[0]
    events = list(tf.train.summary_iterator(path))  # TF1's name for the reader
    assert len(events) == len(list(summary_iterator(path)))
    return events


def test_media_summaries_merge_and_reach_the_event_file(tmp_path):
    img = tf.summary.image("inputs", tf.random_uniform([2, 4, 4, 3]))
    snd = tf.summary.audio("sound", tf.zeros([1, 10]), 8000)
    txt = tf.summary.text("note", tf.constant("hi"))
    merged = tf.summary.merge_all()
    with tf.Session() as sess, tf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_summary(sess.run(merged), global_step=1)
    values = [v for e in _events(tmp_path) if e.HasField("summary") for v in e.summary.value]
    assert [v.tag for v in values] == ["inputs/image/0", "inputs/image/1", "sound/audio/0", "note"]
    assert values[0].image.encoded_image_string.startswith(b"\x89PNG")
    assert values[2].audio.encoded_audio_string.startswith(b"RIFF")
    assert values[3].tensor.string_val == [b"hi"]
    assert {img, snd, txt} <= set(tf.get_collection(tf.GraphKeys.SUMMARIES))


def test_media_summaries_refuse_bad_input():
    with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 2"):
        tf.summary.image("img", tf.zeros([2, 3]))
    with pytest.raises(TypeError, match="DataType int32 not in list"):
        tf.summary.image("img", tf.zeros([1, 2, 2, 1], tf.int32))
    with pytest.raises(ValueError, match="to have dtype string"):
        tf.summary.text("t", tf.constant(1.0))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="last dim 1, 3, or 4, not \\[1,2,2,2\\]"):
            sess.run(tf.summary.image("img", tf.zeros([1, 2, 2, 2])))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Tensor must be 3-D or 2-D"):
            sess.run(tf.summary.audio("a", tf.zeros([3]), 8000))


def test_add_run_metadata_stores_the_traced_steps_timings_once_per_tag(tmp_path):
    y = tf.constant(2.0) * 3.0
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(meta, "step_7", global_step=7)
    with pytest.raises(ValueError, match="The provided tag was already used for this event type"):
        writer.add_run_metadata(meta, "step_7")
    writer.close()
    tagged = [e for e in _events(tmp_path) if e.HasField("tagged_run_metadata")]
    assert len(tagged) == 1 and tagged[0].step == 7
    assert tagged[0].tagged_run_metadata.tag == "step_7"
    stats = RunMetadataProto.FromString(tagged[0].tagged_run_metadata.run_metadata).step_stats
    nodes = {n.node_name for d in stats.dev_stats for n in d.node_stats}
    assert "mul" in nodes
    assert all(n.all_start_micros > 0 for d in stats.dev_stats for n in d.node_stats)
    np.testing.assert_equal(len(stats.dev_stats), len(meta.step_stats.dev_stats))
