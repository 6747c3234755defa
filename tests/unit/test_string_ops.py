"""tf.strings: errors for what dtf does not support or TF refuses, and use inside a
tf.data pipeline (values are compared with TensorFlow's in tests/goldens/cases_strings.py)."""
from __future__ import annotations

import numpy as np
import pytest

import dtf as tf


def test_unsupported_arguments_name_themselves():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="RaggedTensor"):
            tf.strings.split(["a b"], result_type="RaggedTensor")
        with pytest.raises(ValueError, match="unit"):
            tf.strings.substr(["abc"], 0, 1, unit="UTF8_CHAR")
        with pytest.raises(TypeError, match="out_type"):
            tf.string_to_number(["1"], out_type=tf.uint8)
        with pytest.raises(ValueError, match="vector"):
            tf.string_split([["a b"]])


def test_bad_values_fail_at_run_time_naming_them():
    with tf.Graph().as_default():
        s = tf.placeholder(tf.string, [None])
        num = tf.string_to_number(s, out_type=tf.int64)
        rx = tf.strings.regex_replace(s, "(", "x")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="convert string: 1_0"):
                sess.run(num, {s: ["1", "1_0"]})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid pattern"):
                sess.run(rx, {s: ["a"]})


def test_text_lines_split_into_ids_in_a_dataset(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("3 1 4\n1 5\n")

    def parse(line):
        tokens = tf.string_split(tf.expand_dims(line, 0))
        ids = tf.string_to_number(tokens.values, out_type=tf.int64)
        return tf.strings.reduce_join(tf.strings.join([tokens.values, "!"])), tf.reduce_sum(ids)

    with tf.Graph().as_default():
        ds = tf.data.TextLineDataset(str(path)).map(parse)
        nxt = ds.make_one_shot_iterator().get_next()
        with tf.Session() as sess:
            got = [sess.run(nxt) for _ in range(2)]
    assert got[0][0] == b"3!1!4!" and int(got[0][1]) == 8
    assert got[1][0] == b"1!5!" and int(got[1][1]) == 6
    assert np.asarray(got[1][1]).dtype == np.int64
