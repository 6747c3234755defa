"""tf.image ops with kernels of their own: the codecs (DecodePng, DecodeJpeg, DecodeImage,
EncodePng; host-only, kernels in dtf/kernels/reference/image_codec.py) and the resize ops
(ResizeBilinear, ResizeNearestNeighbor and their gradients, TF's; kernels in
dtf/kernels/reference/image.py). resize_images and the crop/pad/flip helpers are composites
in image_transforms.py.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .common import const_value, convert

__all__ = []  # public names live in tf.image (dtf/image.py)


# -- codecs -------------------------------------------------------------------------------
def _decoded_infer(inputs, attrs):
    channels = attrs.get("channels", 0) or None
    return [(attrs.get("dtype", dtypes.uint8), TensorShape([None, None, channels]))]


register_op("DecodePng")(_decoded_infer)
register_op("DecodeJpeg")(lambda inputs, attrs: _decoded_infer(inputs, {**attrs, "dtype": dtypes.uint8}))
register_op("DecodeImage")(lambda inputs, attrs: [(attrs["dtype"], unknown_shape())])
register_op("EncodePng")(lambda inputs, attrs: [(dtypes.string, TensorShape([]))])
register_op("EncodeJpeg")(lambda inputs, attrs: [(dtypes.string, TensorShape([]))])
for _op in ("DecodePng", "DecodeJpeg", "DecodeImage", "EncodePng", "EncodeJpeg"):
    NotDifferentiable(_op)


def _contents(contents):
    t = convert(contents, "contents", dtype=dtypes.string)
    if not t.shape.is_compatible_with([]):
        raise ValueError(f"contents must be a scalar string, got shape {t.shape}")
    return t


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """The pixels [height, width, channels] of a PNG (``channels`` 0: the file's own);
    ``dtype`` uint8 or uint16."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"decode_png dtype must be uint8 or uint16, got {dtype.name}")
    with _ops.name_scope(name, "DecodePng", [contents]) as scope:
        return _ops.make_tensor("DecodePng", [_contents(contents)],
                                {"channels": int(channels), "dtype": dtype}, name=scope)


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    """The uint8 pixels [height, width, channels] of a JPEG (``channels`` 0, 1 or 3).
    Only TF's default decoding options are supported (others are an error when run)."""
    with _ops.name_scope(name, "DecodeJpeg", [contents]) as scope:
        return _ops.make_tensor("DecodeJpeg", [_contents(contents)], {
            "channels": int(channels), "ratio": int(ratio),
            "fancy_upscaling": bool(fancy_upscaling),
            "try_recover_truncated": bool(try_recover_truncated),
            "acceptable_fraction": float(acceptable_fraction), "dct_method": str(dct_method)},
            name=scope)


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None, expand_animations=True):
    """A PNG or JPEG, told apart by its first bytes, as [height, width, channels] pixels of
    ``dtype`` (uint8 or uint16 straight from the file; a float dtype scales to [0, 1] as
    convert_image_dtype does). The static shape is unknown, as in TF 1.x."""
    from .image_transforms import convert_image_dtype

    dtype = dtypes.as_dtype(dtype)
    with _ops.name_scope(name, "decode_image", [contents]) as scope:
        raw = dtypes.uint16 if dtype == dtypes.uint16 else dtypes.uint8
        pixels = _ops.make_tensor("DecodeImage", [_contents(contents)], {
            "channels": int(channels or 0), "dtype": raw,
            "expand_animations": bool(expand_animations)}, name=scope if raw == dtype else None)
        return pixels if raw == dtype else convert_image_dtype(pixels, dtype, name=scope)


def encode_png(image, compression=-1, name=None):
    """A PNG (scalar string) of ``image`` [height, width, 1-4 channels], uint8 or uint16;
    ``compression`` is zlib's level (-1: its default)."""
    with _ops.name_scope(name, "EncodePng", [image]) as scope:
        image = convert(image, "image")
        if image.dtype not in (dtypes.uint8, dtypes.uint16):
            raise TypeError(f"encode_png takes uint8 or uint16 images, got {image.dtype.name}")
        if image.shape.ndims not in (None, 3):
            raise ValueError(f"image must be 3-dimensional, got shape {image.shape}")
        return _ops.make_tensor("EncodePng", [image], {"compression": int(compression),
                                                       "T": image.dtype}, name=scope)


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):
    """A JPEG (scalar string) of the uint8 ``image`` [height, width, 1 or 3], written by
    libjpeg (through Pillow) with TF's options; ``density_unit='cm'`` and
    ``xmp_metadata`` are not supported (an error when run)."""
    with _ops.name_scope(name, "EncodeJpeg", [image]) as scope:
        image = convert(image, "image")
        if image.dtype != dtypes.uint8:
            raise TypeError(f"encode_jpeg takes uint8 images, got {image.dtype.name}")
        if image.shape.ndims not in (None, 3):
            raise ValueError(f"image must be 3-dimensional, got shape {image.shape}")
        return _ops.make_tensor("EncodeJpeg", [image], {
            "format": str(format), "quality": int(quality), "progressive": bool(progressive),
            "optimize_size": bool(optimize_size), "chroma_downsampling": bool(chroma_downsampling),
            "density_unit": str(density_unit), "x_density": int(x_density),
            "y_density": int(y_density), "xmp_metadata": str(xmp_metadata)}, name=scope)


# -- resize ---------------------------------------------------------------------------------
def _resized_infer(out_dtype):
    def infer(inputs, attrs):
        images, size = inputs
        dims = images.shape.as_tuple_or_none() or (None,) * 4
        hw = const_value(size)
        h, w = (int(hw.reshape(-1)[0]), int(hw.reshape(-1)[1])) if hw is not None else (None, None)
        return [(out_dtype or images.dtype, TensorShape([dims[0], h, w, dims[3]]))]
    return infer


register_op("ResizeBilinear")(_resized_infer(dtypes.float32))
register_op("ResizeNearestNeighbor")(_resized_infer(None))
register_op("ResizeBilinearGrad")(lambda inputs, attrs: [(inputs[1].dtype, inputs[1].shape)])
register_op("ResizeNearestNeighborGrad")(_resized_infer(None))


def _resize(op_type, images, size, align_corners, half_pixel_centers, name):
    with _ops.name_scope(name, op_type, [images, size]) as scope:
        images = convert(images, "images")
        if images.shape.ndims not in (None, 4):
            raise ValueError(f"{op_type}: images must be 4-D [batch, height, width, channels], "
                             f"got shape {images.shape}")
        if align_corners and half_pixel_centers:
            raise ValueError("If half_pixel_centers is True, align_corners must be False.")
        size = convert(size, "size", dtype=dtypes.int32)
        return _ops.make_tensor(op_type, [images, size], {
            "T": images.dtype, "align_corners": bool(align_corners),
            "half_pixel_centers": bool(half_pixel_centers)}, name=scope)


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """[batch, height, width, channels] images resized to ``size`` by bilinear
    interpolation (float32 out)."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """[batch, height, width, channels] images resized to ``size`` by taking the nearest
    pixel (dtype kept)."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers,
                   name)


def _flags(op):
    return {"align_corners": op.get_attr("align_corners"),
            "half_pixel_centers": op.get_attr("half_pixel_centers")}


@RegisterGradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    if op.inputs[0].dtype not in (dtypes.float32, dtypes.float64, dtypes.float16):
        return [None, None]
    g = _ops.make_tensor("ResizeBilinearGrad", [grad, op.inputs[0]],
                         {"T": op.inputs[0].dtype, **_flags(op)})
    return [g, None]


@RegisterGradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op, grad):
    from . import array_ops

    image = op.inputs[0]
    known = image.shape.as_tuple_or_none()
    if known is not None and None not in known[1:3]:
        size = convert(list(known[1:3]), "size", dtype=dtypes.int32)
    else:
        size = array_ops.shape(image)[1:3]
    g = _ops.make_tensor("ResizeNearestNeighborGrad", [grad, size],
                         {"T": grad.dtype, **_flags(op)})
    return [g, None]


NotDifferentiable("ResizeBilinearGrad")
NotDifferentiable("ResizeNearestNeighborGrad")
