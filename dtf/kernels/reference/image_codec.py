"""Reference kernels of the image codecs: DecodePng / EncodePng (PNG read and written here,
with zlib: every bit depth and colour type, which the usual Python codec library cannot
keep at 16 bits), DecodeJpeg through Pillow (libjpeg: TF's pixels), and DecodeImage, which
picks the format from the first bytes.

Channel conversions follow what TF asks libpng/libjpeg for: a grey PNG read as RGB repeats
the grey, alpha is dropped or added (opaque), colour read as grey is libpng's
rgb_to_gray with TF's weights (0.299, 0.587) in its 15-bit fixed point, a JPEG read as
grey is libjpeg's luma, and 16-bit samples read as uint8 keep their high byte.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from dtf.framework import errors

from .table import reference

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}  # PNG colour type -> samples per pixel


def _bad(message):
    return errors.InvalidArgumentError(None, None, message)


def _bytes(contents):
    value = contents.item() if isinstance(contents, np.ndarray) else contents
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, (bytes, bytearray)):
        raise _bad(f"contents must be a scalar string, got {type(value).__name__}")
    return bytes(value)


# -- PNG ----------------------------------------------------------------------------------
def _chunks(data):
    pos = len(_PNG_SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length:
            raise _bad("Invalid PNG data: a chunk runs past the end of the data")
        yield kind, body
        pos += 12 + length


def _unfilter(raw, height, stride, bpp):
    """The scanlines of ``raw`` (each a filter byte + ``stride`` bytes) with PNG's five
    filters undone."""
    out = np.zeros((height, stride), np.uint8)
    prior = np.zeros(stride, np.int64)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw, np.uint8, stride, start + 1).astype(np.int64)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + prior) & 255
        elif kind == 1:  # Sub: a running sum per byte lane
            row = line.copy()
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 255
        elif kind in (3, 4):
            row = line.copy()
            up = prior
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                if kind == 3:
                    row[i] = (row[i] + ((left + up[i]) >> 1)) & 255
                else:
                    upleft = up[i - bpp] if i >= bpp else 0
                    p = left + up[i] - upleft
                    pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - upleft)
                    pred = left if pa <= pb and pa <= pc else (up[i] if pb <= pc else upleft)
                    row[i] = (row[i] + pred) & 255
        else:
            raise _bad(f"Invalid PNG data: unknown filter type {kind} in row {y}")
        out[y] = row
        prior = row
    return out


def png_pixels(data):
    """(pixels [h, w, samples] of the file's own depth (uint8/uint16), colour type,
    bit depth) of a non-interlaced PNG; palettes expanded to RGB(A)."""
    if not data.startswith(_PNG_SIGNATURE):
        raise _bad("Invalid PNG data, size %d" % len(data))
    header, idat, palette, trns = None, [], None, None
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"PLTE":
            palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IEND":
            break
    if header is None or not idat:
        raise _bad("Invalid PNG data: no IHDR or IDAT chunk")
    width, height, depth, color, _, _, interlace = header
    if color not in _CHANNELS or depth not in (1, 2, 4, 8, 16):
        raise _bad(f"Invalid PNG data: colour type {color}, bit depth {depth}")
    if interlace:
        raise _bad("Adam7-interlaced PNG images are not supported by dtf's decoder")
    samples = _CHANNELS[color]
    stride = (width * samples * depth + 7) // 8
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise _bad(f"Invalid PNG data: {e}") from None
    if len(raw) < height * (stride + 1):
        raise _bad("Invalid PNG data: the image data is truncated")
    rows = _unfilter(raw, height, stride, max(1, samples * depth // 8))
    if depth == 16:
        pixels = rows.view(">u2").astype(np.uint16).reshape(height, width, samples)
    elif depth == 8:
        pixels = rows.reshape(height, width, samples)
    else:
        bits = np.unpackbits(rows, axis=1).reshape(height, -1, depth)
        values = (bits * (1 << np.arange(depth - 1, -1, -1))).sum(-1)[:, :width]
        if color == 0:  # grey below 8 bits is scaled to 0..255 (libpng's expand)
            values = values * (255 // ((1 << depth) - 1))
        pixels = values.astype(np.uint8).reshape(height, width, 1)
    if color == 3:
        if palette is None:
            raise _bad("Invalid PNG data: a palette image without a PLTE chunk")
        idx = pixels[..., 0].astype(np.intp)
        if idx.size and idx.max() >= len(palette):
            raise _bad("Invalid PNG data: a palette index past the palette")
        rgb = palette[idx]
        if trns is not None:
            alpha = np.full(len(palette), 255, np.uint8)
            alpha[:len(trns)] = np.frombuffer(trns, np.uint8)[:len(palette)]
            rgb = np.concatenate([rgb, alpha[idx][..., None]], axis=-1)
        return rgb, (6 if trns is not None else 2), 8
    return pixels, color, depth


def _to_gray(rgb, max_value):
    """libpng's rgb_to_gray with TF's weights: 15-bit fixed-point coefficients."""
    r, g = int(0.299 * 32768), int(0.587 * 32768)
    b = 32768 - r - g
    x = rgb.astype(np.int64)
    # libpng rounds in its 16-bit path only.
    gray = (r * x[..., 0] + g * x[..., 1] + b * x[..., 2] + (16384 if max_value > 255 else 0)) >> 15
    return np.minimum(gray, max_value)


def convert_channels(pixels, channels, max_value):
    """``pixels`` (1-4 samples) as ``channels`` samples (0: as they are)."""
    have = pixels.shape[-1]
    if channels in (0, have):
        return pixels
    color = pixels[..., :3] if have >= 3 else np.repeat(pixels[..., :1], 3, -1)
    alpha = pixels[..., -1:] if have in (2, 4) else np.full(pixels.shape[:-1] + (1,), max_value,
                                                             pixels.dtype)
    gray = pixels[..., :1] if have <= 2 else _to_gray(color, max_value)[..., None]
    out = {1: gray, 2: np.concatenate([gray, alpha], -1), 3: color,
           4: np.concatenate([color, alpha], -1)}[channels]
    return out.astype(pixels.dtype)


def decode_png(data, channels, dtype):
    pixels, _, depth = png_pixels(data)
    want16 = np.dtype(dtype) == np.uint16
    if depth == 16 and not want16:
        pixels = (pixels >> 8).astype(np.uint8)
    elif depth != 16 and want16:
        pixels = pixels.astype(np.uint16) * 257
    return convert_channels(pixels, channels, 65535 if want16 else 255)


def _check_channels(channels, allowed=(0, 1, 2, 3, 4)):
    if channels not in allowed:
        raise _bad(f"channels must be {', '.join(map(str, allowed[:-1]))} or {allowed[-1]}, "
                   f"got {channels}")


@reference("DecodePng")
def _decode_png(attrs, contents):
    channels = int(attrs.get("channels", 0))
    _check_channels(channels)
    return decode_png(_bytes(contents), channels, attrs.get("dtype").as_numpy_dtype)


def encode_png(image, level):
    """A PNG of ``image`` ([h, w, 1-4] uint8 or uint16), rows unfiltered."""
    if image.ndim != 3 or not 1 <= image.shape[2] <= 4:
        raise _bad(f"image must be 3-dimensional with 1 to 4 channels, got shape "
                   f"{list(image.shape)}")
    height, width, channels = image.shape
    depth = 16 if image.dtype == np.uint16 else 8
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    body = image.astype(">u2" if depth == 16 else np.uint8).reshape(height, -1).view(np.uint8)
    rows = np.concatenate([np.zeros((height, 1), np.uint8), body], axis=1)

    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))

    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    return (_PNG_SIGNATURE + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), level))
            + chunk(b"IEND", b""))


@reference("EncodePng")
def _encode_png(attrs, image):
    level = int(attrs.get("compression", -1))
    if not -1 <= level <= 9:
        raise _bad(f"compression should be in [-1,9], got {level}")
    return np.asarray(encode_png(np.asarray(image), level), dtype=object)


# -- JPEG ---------------------------------------------------------------------------------
# TF decodes with libjpeg's fast integer IDCT (JDCT_IFAST, its default "" dct_method) and
# fancy (triangle) chroma upsampling. Pillow offers the fast IDCT only together with plain
# (box) upsampling, so colour JPEGs are read as YCbCr that way, the chroma samples are
# taken back from the boxes, and libjpeg's fancy upsampling and YCbCr->RGB tables are
# applied here: the pixels are TF's.
_SCALE = 16
_HALF = 1 << (_SCALE - 1)


def _fix(x):
    return int(x * (1 << _SCALE) + 0.5)


_X = np.arange(256, dtype=np.int64) - 128
_CR_R = (_fix(1.40200) * _X + _HALF) >> _SCALE
_CB_B = (_fix(1.77200) * _X + _HALF) >> _SCALE
_CR_G = -_fix(0.71414) * _X
_CB_G = -_fix(0.34414) * _X + _HALF


def _fancy_h2(rows):
    """libjpeg's h2v1_fancy_upsample along the last axis (ints, width >= 1)."""
    n = rows.shape[-1]
    if n == 1:
        return np.repeat(rows, 2, axis=-1)
    left = np.concatenate([rows[..., :1], rows[..., :-1]], axis=-1)
    right = np.concatenate([rows[..., 1:], rows[..., -1:]], axis=-1)
    out = np.empty(rows.shape[:-1] + (2 * n,), np.int64)
    out[..., 0::2] = (3 * rows + left + 1) >> 2
    out[..., 1::2] = (3 * rows + right + 2) >> 2
    out[..., 0] = rows[..., 0]
    out[..., -1] = rows[..., -1]
    return out


def _fancy_h2v2(plane):
    """libjpeg's h2v2_fancy_upsample (edge rows and columns replicated)."""
    above = np.concatenate([plane[:1], plane[:-1]])
    below = np.concatenate([plane[1:], plane[-1:]])
    out = np.empty((2 * plane.shape[0], 2 * plane.shape[1]), np.int64)
    for v, far in ((0, above), (1, below)):
        col = plane * 3 + far
        last = np.concatenate([col[:, :1], col[:, :-1]], axis=1)
        nxt = np.concatenate([col[:, 1:], col[:, -1:]], axis=1)
        row = np.empty((plane.shape[0], 2 * plane.shape[1]), np.int64)
        row[:, 0::2] = (col * 3 + last + 8) >> 4
        row[:, 1::2] = (col * 3 + nxt + 7) >> 4
        row[:, 0] = (col[:, 0] * 4 + 8) >> 4
        row[:, -1] = (col[:, -1] * 4 + 7) >> 4
        out[v::2] = row
    return out


def _ycc_to_rgb(y, cb, cr):
    r = y + _CR_R[cr]
    g = y + ((_CB_G[cb] + _CR_G[cr]) >> _SCALE)
    b = y + _CB_B[cb]
    return np.clip(np.stack([r, g, b], -1), 0, 255).astype(np.uint8)


def _open_fast(data, mode=None):
    import io

    from PIL import Image  # a codec library: libjpeg's own decoder, as in TF

    im = Image.open(io.BytesIO(data))
    if im.format != "JPEG":
        raise _bad(f"Invalid JPEG data: {im.format} image")
    if mode is not None and im.mode != mode:
        im.draft(mode, None)
    im.decoderconfig = (1, 1)  # libjpeg's fast IDCT (with box upsampling)
    im.load()
    return im


def _color_pixels(data):
    im = _open_fast(data, "YCbCr")
    if im.mode != "YCbCr":
        return np.asarray(im.convert("RGB"))
    ycc = np.asarray(im).astype(np.int64)
    (_, yh, yv, _), (_, ch, cv, _) = im.layer[0], im.layer[1]
    ratio = (yh // max(ch, 1), yv // max(cv, 1))
    h, w = ycc.shape[:2]
    chroma = []
    for k in (1, 2):
        plane = ycc[::ratio[1], ::ratio[0], k]
        if ratio == (2, 2):
            plane = _fancy_h2v2(plane)
        elif ratio == (2, 1):
            plane = _fancy_h2(plane)
        elif ratio != (1, 1):
            return np.asarray(_open_fast(data).convert("RGB"))  # rare samplings: box
        chroma.append(plane[:h, :w])
    return _ycc_to_rgb(ycc[..., 0], chroma[0], chroma[1])


def decode_jpeg(data, channels):
    try:
        probe = _open_fast(data) if channels != 1 else None
        if channels == 1 or (probe.mode == "L" and channels == 0):
            pixels = np.asarray(_open_fast(data, "L"))  # libjpeg's own luma
        elif probe.mode in ("RGB", "YCbCr", "L"):
            pixels = _color_pixels(data) if probe.mode != "L" else \
                np.repeat(np.asarray(probe)[..., None], 3, -1)
        elif probe.mode == "CMYK" and channels == 0:
            pixels = np.asarray(probe)
        else:
            raise _bad(f"JPEG in mode {probe.mode} cannot be decoded to {channels} channels")
    except errors.OpError:
        raise
    except Exception as e:  # noqa: BLE001 - Pillow's errors vary by cause
        raise _bad(f"Invalid JPEG data or crop window, data size {len(data)}: {e}") from None
    return pixels.reshape(pixels.shape[0], pixels.shape[1], -1).astype(np.uint8)


_JPEG_DEFAULTS = {"ratio": 1, "fancy_upscaling": True, "try_recover_truncated": False,
                  "acceptable_fraction": 1.0, "dct_method": ""}


def check_jpeg_attrs(attrs):
    for name, default in _JPEG_DEFAULTS.items():
        value = attrs.get(name, default)
        if value != default and not (name == "dct_method" and value == "INTEGER_ACCURATE"):
            raise _bad(f"decode_jpeg({name}={value!r}) is not supported by dtf (only "
                       f"{default!r})")


@reference("DecodeJpeg")
def _decode_jpeg(attrs, contents):
    channels = int(attrs.get("channels", 0))
    _check_channels(channels, (0, 1, 3))
    check_jpeg_attrs(attrs)
    return decode_jpeg(_bytes(contents), channels)


def encode_jpeg(image, attrs):
    import io

    from PIL import Image

    if image.ndim != 3 or image.shape[2] not in (1, 3):
        raise _bad(f"image must be 3-dimensional with 1 or 3 channels, got shape "
                   f"{list(image.shape)}")
    fmt = attrs.get("format", "")
    channels = {"": image.shape[2], "grayscale": 1, "rgb": 3}.get(fmt)
    if channels is None or channels != image.shape[2]:
        raise _bad(f"encode_jpeg format {fmt!r} does not fit an image with {image.shape[2]} "
                   "channels")
    quality = int(attrs.get("quality", 95))
    if not 0 <= quality <= 100:
        raise _bad(f"quality must be in [0,100], got {quality}")
    if attrs.get("xmp_metadata", ""):
        raise _bad("encode_jpeg(xmp_metadata=...) is not supported by dtf")
    if attrs.get("density_unit", "in") != "in":
        raise _bad("encode_jpeg(density_unit='cm') is not supported by dtf (only 'in')")
    pil = Image.fromarray(image[..., 0] if channels == 1 else image, "L" if channels == 1 else "RGB")
    out = io.BytesIO()
    pil.save(out, "JPEG", quality=quality, progressive=bool(attrs.get("progressive", False)),
             optimize=bool(attrs.get("optimize_size", False)),
             subsampling=2 if attrs.get("chroma_downsampling", True) else 0,
             dpi=(int(attrs.get("x_density", 300)), int(attrs.get("y_density", 300))))
    return out.getvalue()


@reference("EncodeJpeg")
def _encode_jpeg(attrs, image):
    return np.asarray(encode_jpeg(np.asarray(image, np.uint8), attrs), dtype=object)


# -- any format ---------------------------------------------------------------------------
@reference("DecodeImage")
def _decode_image(attrs, contents):
    data = _bytes(contents)
    channels = int(attrs.get("channels", 0))
    dtype = attrs.get("dtype").as_numpy_dtype
    if data.startswith(_PNG_SIGNATURE):
        _check_channels(channels)
        return decode_png(data, channels, dtype)
    if data[:3] == b"\xff\xd8\xff":
        _check_channels(channels, (0, 1, 3))
        pixels = decode_jpeg(data, channels)
        return pixels.astype(np.uint16) * 257 if np.dtype(dtype) == np.uint16 else pixels
    if data[:3] == b"GIF" or data[:2] == b"BM":
        raise _bad("decode_image: GIF and BMP images are not supported by dtf (PNG and JPEG are)")
    raise _bad("Unknown image file format. One of JPEG, PNG, GIF, BMP required.")
