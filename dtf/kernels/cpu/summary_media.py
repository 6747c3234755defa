"""CPU kernels of ImageSummary (PNG), AudioSummaryV2 (16-bit WAV) and TensorSummaryV2
(TensorProto), each returning a serialized Summary as TF's kernels do."""
from __future__ import annotations

import io
import struct
import wave
import zlib

import numpy as np

from dtf.framework import dtypes, errors
from dtf.kernels.registry import register_kernel

# TF's DataType enum values (types.proto) of the dtypes dtf has.
TF_DTYPE_ENUM = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
                 "string": 7, "int64": 9, "bool": 10, "uint16": 17, "float16": 19}


def _tag(t) -> str:
    t = np.asarray(t, dtype=object).reshape(-1)[0]
    return t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t)


def _serialized(summary) -> np.ndarray:
    return np.array(summary.SerializeToString(), dtype=object)


def encode_png(pixels: np.ndarray) -> bytes:
    """A [height, width, 1|3|4] uint8 array as PNG (8-bit grey, RGB or RGBA)."""
    height, width, depth = pixels.shape
    color_type = {1: 0, 3: 2, 4: 6}[depth]

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = np.concatenate([np.zeros((height, 1), np.uint8),
                           np.ascontiguousarray(pixels).reshape(height, width * depth)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes())) + chunk(b"IEND", b""))


def to_uint8_image(values: np.ndarray, bad_color) -> np.ndarray:
    """TF's NormalizeFloatImage for one [h, w, depth] image: scale by 255/max when all
    finite pixels are >= 0, else by 127/max|v| around 128 (a max under 1e-6 scales by 0);
    truncate to uint8; pixels with a non-finite channel take ``bad_color``."""
    depth = values.shape[-1]
    finite = np.isfinite(values).all(axis=-1)
    good = values[finite].astype(np.float32)  # TF takes min and max as float
    lo = good.min() if good.size else np.float32(np.inf)
    hi = good.max() if good.size else np.float32(-np.inf)
    kind = values.dtype.type
    f32 = np.float32
    if lo < 0:
        top = max(abs(lo), abs(hi))
        scale, offset = (f32(0) if top < 1e-6 else f32(127.0) / top), f32(128.0)
    else:
        scale, offset = (f32(0) if hi < 1e-6 else f32(255.0) / hi), f32(0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values * kind(scale) + kind(offset)
    out = np.where(finite[..., None], scaled, 0).astype(np.uint8)
    out[~finite] = np.asarray(bad_color, np.uint8)[:depth]
    return out


@register_kernel("ImageSummary", "CPU")
def image_summary(node):
    from dtf.summary import proto
    max_images, bad_color = node.attrs["max_images"], node.attrs["bad_color"]

    def compute(ctx, tag, tensor):
        if tensor.ndim != 4 or tensor.shape[-1] not in (1, 3, 4):
            raise errors.InvalidArgumentError(
                None, None, f"Tensor must be 4-D with last dim 1, 3, or 4, not "
                f"[{','.join(map(str, tensor.shape))}]")
        batch, height, width, depth = tensor.shape
        count = min(batch, max_images)
        base, summary = _tag(tag), proto.Summary()
        for i in range(count):
            img = tensor[i] if tensor.dtype == np.uint8 else to_uint8_image(tensor[i], bad_color)
            summary.value.add(
                tag=f"{base}/image" if max_images == 1 else f"{base}/image/{i}",
                image=proto.SummaryImage(height=height, width=width, colorspace=depth,
                                         encoded_image_string=encode_png(img)))
        return _serialized(summary)

    return compute


def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """[frames, channels] floats in [-1, 1] as 16-bit PCM WAV, rounded and clamped as TF."""
    pcm = np.clip(np.round(samples.astype(np.float32) * 32768.0), -32768, 32767).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


@register_kernel("AudioSummaryV2", "CPU")
def audio_summary(node):
    from dtf.summary import proto
    max_outputs = node.attrs["max_outputs"]

    def compute(ctx, tag, tensor, sample_rate):
        if tensor.ndim not in (2, 3):
            raise errors.InvalidArgumentError(
                None, None, f"Tensor must be 3-D or 2-D, got: [{','.join(map(str, tensor.shape))}]")
        rate = float(sample_rate)
        if rate <= 0:
            raise errors.InvalidArgumentError(None, None, "sample_rate must be > 0")
        clips = tensor if tensor.ndim == 3 else tensor[:, :, None]
        count = min(clips.shape[0], max_outputs)
        base, summary = _tag(tag), proto.Summary()
        for i in range(count):
            summary.value.add(
                tag=f"{base}/audio" if max_outputs == 1 else f"{base}/audio/{i}",
                audio=proto.SummaryAudio(
                    sample_rate=rate, num_channels=clips.shape[2], length_frames=clips.shape[1],
                    encoded_audio_string=encode_wav(clips[i], int(rate)),
                    content_type="audio/wav"))
        return _serialized(summary)

    return compute


def tensor_proto(value: np.ndarray, dtype):
    """A TensorProto of ``value``: numbers as tensor_content, strings in string_val."""
    from dtf.summary import proto
    dtype = dtypes.as_dtype(dtype)
    shape = proto.TensorShapeProto(dim=[proto.TensorShapeDim(size=int(d)) for d in value.shape])
    out = proto.TensorProto(dtype=TF_DTYPE_ENUM[dtype.name], tensor_shape=shape)
    if dtype == dtypes.string:
        out.string_val.extend(v if isinstance(v, bytes) else str(v).encode("utf-8")
                              for v in value.reshape(-1))
    else:
        out.tensor_content = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<")).tobytes()
    return out


@register_kernel("TensorSummaryV2", "CPU")
def tensor_summary(node):
    from dtf.summary import proto
    dtype = node.attrs["T"]

    def compute(ctx, tag, tensor, serialized_metadata):
        meta = np.asarray(serialized_metadata, dtype=object).reshape(-1)[0]
        meta = meta.encode("utf-8") if isinstance(meta, str) else bytes(meta)
        summary = proto.Summary()
        summary.value.add(tag=_tag(tag), metadata=proto.SummaryMetadata.FromString(meta),
                          tensor=tensor_proto(np.asarray(tensor), dtype))
        return _serialized(summary)

    return compute
