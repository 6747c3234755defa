"""Names TF1 scripts reach for beyond ops: tf.compat.v1, tf.app, tf.logging, namespaces."""
import pytest

import dtf as tf


def test_compat_v1_is_the_tf1_surface():
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    x = v1.placeholder(v1.float32, [2])
    with v1.Session() as sess:
        assert list(sess.run(x * 2.0, {x: [1, 2]})) == [2.0, 4.0]


def test_top_level_aliases_of_tf1():
    assert tf.random_crop is tf.image.random_crop
    assert tf.executing_eagerly() is False and tf.compat.v1.executing_eagerly() is False
    crop = tf.random_crop(tf.reshape(tf.range(48.0), [4, 4, 3]), [2, 2, 3], seed=1)
    with tf.Session() as sess:
        assert sess.run(crop).shape == (2, 2, 3)


def test_app_run_exits_with_main_return_value():
    with pytest.raises(SystemExit) as e:
        tf.app.run(main=lambda argv: 3, argv=["prog"])
    assert e.value.code == 3


def test_logging_levels_and_calls(caplog):
    tf.logging.set_verbosity(tf.logging.INFO)
    with caplog.at_level(tf.logging.INFO, logger="dtf"):
        tf.logging.info("step %d", 7)
    assert "step 7" in caplog.text


def test_namespaces_resolve():
    assert tf.train.Server and tf.train.ClusterSpec and tf.train.MonitoredTrainingSession
    assert tf.nn.relu and tf.summary.scalar and tf.errors.AbortedError
    assert tf.distribute.cluster_resolver.TFConfigClusterResolver
    assert tf.queue.FIFOQueue and tf.initializers.zeros and tf.random.normal


def test_input_pipeline_namespaces_resolve():
    v1 = tf.compat.v1
    assert v1.data.Dataset and v1.data.TFRecordDataset and v1.data.Iterator
    assert v1.data.experimental.AUTOTUNE == -1 and tf.data.make_one_shot_iterator
    assert tf.io.TFRecordWriter is tf.python_io.TFRecordWriter
    assert tf.io.parse_single_example is tf.parse_single_example and tf.io.decode_raw
    assert tf.train.Example and tf.train.Features and tf.train.SequenceExample
    assert tf.train.QueueRunner is tf.train.queue_runner.QueueRunner
    assert tf.train.shuffle_batch and tf.train.string_input_producer and tf.TFRecordReader
    assert tf.RandomShuffleQueue and tf.PaddingFIFOQueue and tf.count_up_to
