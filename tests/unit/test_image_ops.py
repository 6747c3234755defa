"""tf.image: errors for bad input, and the classic input-pipeline use (decode -> resize ->
random flip in a Dataset.map). Pixels and resize values are compared with TensorFlow's in
tests/goldens/cases_image.py, on files TensorFlow wrote (tests/fixtures/images)."""
from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

import dtf as tf

IMAGES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "images")


def _read(name):
    with open(os.path.join(IMAGES, name), "rb") as f:
        return f.read()


def _run(t, feed=None):
    with tf.Session() as sess:
        return sess.run(t, feed)


def test_bad_image_data_is_a_clear_error():
    with tf.Graph().as_default():
        data = tf.placeholder(tf.string, [])
        png, jpeg, any_ = (tf.image.decode_png(data), tf.image.decode_jpeg(data),
                           tf.image.decode_image(data))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid PNG data"):
                sess.run(png, {data: b"not a png"})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid JPEG data"):
                sess.run(jpeg, {data: b"\xff\xd8\xff broken"})
            with pytest.raises(tf.errors.InvalidArgumentError, match="GIF and BMP"):
                sess.run(any_, {data: b"GIF89a...."})
            with pytest.raises(tf.errors.InvalidArgumentError, match="Unknown image file format"):
                sess.run(any_, {data: b"hello"})
            truncated = _read("rgb.png")[:60]
            with pytest.raises(tf.errors.InvalidArgumentError, match="PNG"):
                sess.run(png, {data: truncated})


def test_unsupported_options_name_themselves():
    with tf.Graph().as_default():
        photo = tf.constant(_read("photo.jpg"))
        with pytest.raises(tf.errors.InvalidArgumentError, match="ratio"):
            _run(tf.image.decode_jpeg(photo, ratio=2))
        with pytest.raises(NotImplementedError, match="BICUBIC and AREA"):
            tf.image.resize_images(tf.zeros([4, 4, 1]), [2, 2], method=2)
        with pytest.raises(ValueError, match="half_pixel_centers"):
            tf.image.resize_bilinear(tf.zeros([1, 4, 4, 1]), [2, 2], align_corners=True,
                                     half_pixel_centers=True)
        with pytest.raises(TypeError, match="uint8 or uint16"):
            tf.image.encode_png(tf.zeros([2, 2, 1]))


def test_png_palette_low_bit_depth_and_filters():
    """Palette with transparency, 2-bit grey and every row filter, hand-assembled."""
    import struct

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    def png(width, height, depth, color, rows, extra=b""):
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                                                    depth, color, 0, 0, 0))
                + extra + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))

    palette = chunk(b"PLTE", bytes([10, 20, 30, 40, 50, 60])) + chunk(b"tRNS", bytes([128]))
    pal = png(2, 1, 8, 3, [b"\x00\x00\x01"], palette)
    grey2 = png(4, 1, 2, 0, [b"\x00" + bytes([0b00011011])])
    # rows of 3 RGB pixels under the None, Sub, Up, Average and Paeth filters
    raw = np.arange(45, dtype=np.uint8).reshape(5, 9) * 5
    rows, prior = [], np.zeros(9, np.int64)
    for kind, line in enumerate(raw.astype(np.int64)):
        left = np.concatenate([[0, 0, 0], line[:-3]])
        upleft = np.concatenate([[0, 0, 0], prior[:-3]])
        p = left + prior - upleft
        paeth = np.where((abs(p - left) <= abs(p - prior)) & (abs(p - left) <= abs(p - upleft)),
                         left, np.where(abs(p - prior) <= abs(p - upleft), prior, upleft))
        pred = [0, left, prior, (left + prior) // 2, paeth][kind]
        rows.append(bytes([kind]) + ((line - pred) % 256).astype(np.uint8).tobytes())
        prior = line
    filtered = png(3, 5, 8, 2, rows)
    with tf.Graph().as_default():
        got = _run([tf.image.decode_png(pal), tf.image.decode_png(grey2),
                    tf.image.decode_png(filtered)])
    assert got[0].tolist() == [[[10, 20, 30, 128], [40, 50, 60, 255]]]
    assert got[1][..., 0].tolist() == [[0, 85, 170, 255]]
    np.testing.assert_array_equal(got[2], raw.reshape(5, 3, 3))


def test_input_pipeline_decodes_resizes_and_flips_in_a_dataset():
    files = [_read("rgb.png"), _read("photo.jpg")]

    def prepare(data):
        image = tf.image.decode_image(data, channels=3)
        image.set_shape([None, None, 3])
        image = tf.image.resize_images(image, [8, 8])
        image = tf.image.random_flip_left_right(image, seed=1)
        return tf.image.per_image_standardization(image)

    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(files).map(prepare, num_parallel_calls=2).batch(2)
        batch = _run(ds.make_one_shot_iterator().get_next())
    assert batch.shape == (2, 8, 8, 3) and batch.dtype == np.float32
    np.testing.assert_allclose(batch.reshape(2, -1).mean(1), 0, atol=1e-5)
