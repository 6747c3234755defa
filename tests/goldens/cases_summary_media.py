"""tf.summary.image / audio / text / tensor_summary: the Summary each op evaluates to,
compared field by field (images as decoded pixels, since PNG encoders may differ in the
compressed bytes)."""
import io
import struct
import wave
import zlib

import numpy as np

from tests.goldens.harness import case


def _decode_png(data):
    """Pixels of an 8-bit, non-interlaced PNG (any row filter)."""
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, _, color_type, _, _, _ = header
    depth = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    raw = zlib.decompress(idat)
    stride = width * depth
    out = np.zeros((height, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - depth] if x >= depth else 0
            b = prev[x]
            c = prev[x - depth] if x >= depth else 0
            if kind == 0:
                pred = 0
            elif kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) // 2
            else:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (row[x] + pred) & 0xFF
        out[y] = cur
        prev = cur
    return out.reshape(height, width, depth).astype(np.uint8)


def _image_values(tf, serialized):
    summary = tf.Summary.FromString(serialized)
    out = {}
    for i, v in enumerate(summary.value):
        out[f"{i}_tag"] = v.tag
        out[f"{i}_size"] = [v.image.height, v.image.width, v.image.colorspace]
        out[f"{i}_pixels"] = _decode_png(v.image.encoded_image_string)
    return out


@case
def image_summaries(tf):
    rng = np.random.RandomState(9)
    positive = tf.constant(rng.rand(4, 3, 5, 1).astype(np.float32))
    signed = tf.constant((rng.randn(2, 2, 3, 3) * 4).astype(np.float32))
    with_nan = rng.rand(1, 2, 2, 4).astype(np.float32)
    with_nan[0, 0, 1, 2] = np.nan
    bytes_img = tf.constant(rng.randint(0, 256, (1, 3, 2, 3)).astype(np.uint8))
    ops = {"positive": tf.summary.image("pos", positive, max_outputs=2),
           "signed": tf.summary.image("signed", signed, family="fam"),
           "nan": tf.summary.image("nan", tf.constant(with_nan)),
           "uint8": tf.summary.image("bytes", bytes_img),
           "double": tf.summary.image("double", tf.cast(signed, tf.float64) * 0.5, max_outputs=1)}
    names = {f"{k}_op": v.op.name for k, v in ops.items()}

    def run(sess):
        got = sess.run(ops)
        out = dict(names)
        for k, serialized in got.items():
            out.update({f"{k}_{n}": v for n, v in _image_values(tf, serialized).items()})
        return out
    return run


@case
def audio_summaries(tf):
    rng = np.random.RandomState(10)
    mono = tf.constant((rng.rand(3, 50) * 2.4 - 1.2).astype(np.float32))
    stereo = tf.constant((rng.rand(1, 20, 2) * 2 - 1).astype(np.float32))
    ops = {"mono": tf.summary.audio("mono", mono, 8000, max_outputs=2),
           "stereo": tf.summary.audio("stereo", stereo, sample_rate=tf.constant(16000.0))}

    def run(sess):
        out = {}
        for k, serialized in sess.run(ops).items():
            for i, v in enumerate(tf.Summary.FromString(serialized).value):
                a = v.audio
                out[f"{k}_{i}_tag"] = v.tag
                out[f"{k}_{i}_meta"] = [a.sample_rate, a.num_channels, a.length_frames]
                out[f"{k}_{i}_type"] = a.content_type
                with wave.open(io.BytesIO(a.encoded_audio_string)) as w:
                    out[f"{k}_{i}_wav"] = [w.getnchannels(), w.getsampwidth(), w.getframerate()]
                    out[f"{k}_{i}_frames"] = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        return out
    return run


@case
def text_and_tensor_summaries(tf):
    rng = np.random.RandomState(12)
    ops = {"text": tf.summary.text("notes", tf.constant([["a", "bc"], ["d", "é"]])),
           "scalar_text": tf.summary.text("title", tf.constant("hello")),
           "floats": tf.summary.tensor_summary("weights", tf.constant(rng.randn(2, 3).astype(np.float32)),
                                               summary_description="some weights"),
           "ints": tf.summary.tensor_summary("counts", tf.constant([1, 2, 3], tf.int64),
                                             display_name="Counts"),
           "bools": tf.summary.tensor_summary("flags", tf.constant([True, False]))}
    names = {f"{k}_op": v.op.name for k, v in ops.items()}

    def run(sess):
        out = dict(names)
        for k, serialized in sess.run(ops).items():
            v = tf.Summary.FromString(serialized).value[0]
            t = v.tensor
            out[f"{k}_tag"] = v.tag
            out[f"{k}_plugin"] = v.metadata.plugin_data.plugin_name
            out[f"{k}_display"] = v.metadata.display_name
            out[f"{k}_description"] = v.metadata.summary_description
            out[f"{k}_dtype"] = t.dtype
            out[f"{k}_shape"] = np.array([d.size for d in t.tensor_shape.dim], np.int64)
            out[f"{k}_content"] = np.frombuffer(t.tensor_content, np.uint8)
            out[f"{k}_strings"] = np.array([s.decode() for s in t.string_val] or [""])
        return out
    return run
