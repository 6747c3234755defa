"""Writes tests/data/tf_examples.tfrecord and tf_examples.tfrecord.gz with TensorFlow itself:
the files dtf's readers are tested against. Run from the repository root with a Python
that has TensorFlow installed: ``python tests/data/make_tfrecord_fixture.py``."""
import os

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def examples():
    rng = np.random.RandomState(27)
    for i in range(6):
        image = rng.randint(0, 256, size=(4, 4), dtype=np.uint8)
        yield tf.train.Example(features=tf.train.Features(feature={
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i - 2])),
            "weights": tf.train.Feature(float_list=tf.train.FloatList(
                value=list(np.float32([0.5 * i, -1.25, 3.0 + i])))),
            "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"ex{i}".encode()])),
        })).SerializeToString(deterministic=True)


def main():
    plain = os.path.join(HERE, "tf_examples.tfrecord")
    with tf.io.TFRecordWriter(plain) as w:
        for record in examples():
            w.write(record)
    with tf.io.TFRecordWriter(plain + ".gz", options=tf.io.TFRecordOptions(compression_type="GZIP")) as w:
        for record in examples():
            w.write(record)


if __name__ == "__main__":
    main()
