"""The seeds' single-process programs, run with only the import changed."""
import numpy as np

import dtf as tf


def test_238():
    x = tf.constant(2)
    y1 = x + 300
    y2 = x - 66
    y = y1 + y2
    with tf.Session() as sess:
        assert sess.run(y) == 238


def test_hello_string():
    c = tf.constant("Hello, distributed TensorFlow!")
    with tf.Session() as sess:
        assert sess.run(c) == b"Hello, distributed TensorFlow!"
