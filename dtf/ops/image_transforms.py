"""tf.image helpers of input pipelines, composites of registered ops as in TF 1.15's
image_ops_impl: resize_images, flips (fixed and random), transpose, central_crop,
pad/crop to a bounding box, resize_image_with_crop_or_pad, random_crop,
per_image_standardization, convert_image_dtype, adjust/random brightness and contrast,
rgb_to_grayscale, grayscale_to_rgb.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape

__all__ = []  # public names live in tf.image (dtf/image.py)


_OPS = None


def _tf():
    """The op constructors these composites call, by their tf.* names (taken from the ops
    modules, not the dtf facade, which sits above this layer)."""
    global _OPS
    if _OPS is None:
        from types import SimpleNamespace

        from . import (array_ops, control_flow_cond, logging_ops, math_ops, nn_ops,
                       random_ops, reduction_ops, slicing_ops, tensordot_ops)

        picks = {
            array_ops: "expand_dims shape squeeze stack reverse reshape transpose pad identity "
                       "concat ones rank tile",
            math_ops: "minimum maximum cast round less div add subtract saturate_cast "
                      "floordiv multiply square sqrt rsqrt",
            reduction_ops: "reduce_all reduce_prod reduce_mean",
            random_ops: "random_uniform", control_flow_cond: "cond", logging_ops: "Assert",
            slicing_ops: "slice", tensordot_ops: "tensordot"}
        names = {n: getattr(m, n) for m, ns in picks.items() for n in ns.split()}
        _OPS = SimpleNamespace(**names, nn=SimpleNamespace(relu=nn_ops.relu))
    return _OPS


class ResizeMethod:
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _is_tensor(x):
    return isinstance(x, _ops.Tensor)


def _as_batch(image, what="image"):
    """(4-D image, whether it was a batch already)."""
    tf = _tf()
    image = _ops.convert_to_tensor(image, name=what)
    ndims = image.shape.ndims
    if ndims == 4:
        return image, True
    if ndims == 3:
        return tf.expand_dims(image, 0), False
    if ndims is None:
        out = tf.expand_dims(image, 0)
        out.set_shape(TensorShape([None] * 4))
        return out, False
    raise ValueError("'image' must have either 3 or 4 dimensions.")


def _dims(image):
    """The dims of a 4-D image: Python ints where static, scalar tensors elsewhere."""
    tf = _tf()
    static = image.shape.as_tuple_or_none() or (None,) * 4
    dynamic = tf.shape(image)
    return [d if d is not None else dynamic[i] for i, d in enumerate(static)]


def _unbatch(image, is_batch):
    return image if is_batch else _tf().squeeze(image, axis=[0])


def _check(cond, message, asserts):
    """TF's _assert: a Python bool fails now, a tensor adds a run-time Assert."""
    if _is_tensor(cond):
        asserts.append(_tf().Assert(cond, [message]))
    elif not cond:
        raise ValueError(message)


# -- resizing -----------------------------------------------------------------------------
def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """Images (3-D or 4-D) resized to ``size`` [height, width] by ``method`` (BILINEAR
    gives float32; NEAREST_NEIGHBOR keeps the dtype). BICUBIC and AREA are not in dtf."""
    from .image_ops import resize_bilinear, resize_nearest_neighbor

    tf = _tf()
    with _ops.name_scope(name, "resize", [images, size]):
        images, is_batch = _as_batch(images, "images")
        size = _ops.convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if not size.shape.is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        _, height, width, _ = _dims(images)
        if preserve_aspect_ratio:
            f32 = dtypes.float32
            scale = tf.minimum(tf.cast(size[0], f32) / tf.cast(height, f32),
                               tf.cast(size[1], f32) / tf.cast(width, f32))
            size = tf.stack([tf.cast(tf.round(scale * tf.cast(height, f32)), dtypes.int32),
                             tf.cast(tf.round(scale * tf.cast(width, f32)), dtypes.int32)])
        from .common import const_value

        wanted = const_value(size)
        if (wanted is not None and not _is_tensor(height) and not _is_tensor(width)
                and [int(v) for v in wanted] == [height, width]):
            return _unbatch(images, is_batch)  # TF returns the images as they are
        if method == ResizeMethod.BILINEAR:
            out = resize_bilinear(images, size, align_corners=align_corners)
        elif method == ResizeMethod.NEAREST_NEIGHBOR:
            out = resize_nearest_neighbor(images, size, align_corners=align_corners)
        elif method in (ResizeMethod.BICUBIC, ResizeMethod.AREA):
            raise NotImplementedError(f"resize_images(method={method}): BICUBIC and AREA are "
                                      "not supported by dtf (BILINEAR and NEAREST_NEIGHBOR are)")
        else:
            raise ValueError("Resize method is not implemented.")
        return _unbatch(out, is_batch)


# -- flips ----------------------------------------------------------------------------------
def _flip(image, axis, name):
    tf = _tf()
    with _ops.name_scope(None, name, [image]):
        image = _ops.convert_to_tensor(image, name="image")
        ndims = image.shape.ndims
        if ndims not in (3, 4):
            raise ValueError(f"'image' must have either 3 or 4 dimensions, got shape {image.shape}")
        return tf.reverse(image, [axis + (ndims == 4)])


def flip_left_right(image):
    """The image (3-D, or each of a 4-D batch) mirrored left to right."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image):
    """The image (3-D, or each of a 4-D batch) upside down."""
    return _flip(image, 0, "flip_up_down")


def transpose_image(image):
    """Height and width swapped (3-D or 4-D)."""
    tf = _tf()
    image = _ops.convert_to_tensor(image, name="image")
    perm = {3: [1, 0, 2], 4: [0, 2, 1, 3]}.get(image.shape.ndims)
    if perm is None:
        raise ValueError(f"'image' must have either 3 or 4 dimensions, got shape {image.shape}")
    return tf.transpose(image, perm)


def _random_flip(image, axis, seed, name):
    tf = _tf()
    with _ops.name_scope(None, name, [image]):
        image = _ops.convert_to_tensor(image, name="image")
        ndims = image.shape.ndims
        if ndims == 3:
            flip = tf.less(tf.random_uniform([], 0, 1.0, seed=seed), 0.5)
            return tf.cond(flip, lambda: tf.reverse(image, [axis]), lambda: image)
        if ndims == 4:
            n = tf.shape(image)[0]
            flips = tf.cast(tf.round(tf.reshape(tf.random_uniform([n], 0, 1.0, seed=seed),
                                                [n, 1, 1, 1])), image.dtype)
            return flips * tf.reverse(image, [axis + 1]) + (1 - flips) * image
        raise ValueError(f"'image' must have either 3 or 4 dimensions, got shape {image.shape}")


def random_flip_left_right(image, seed=None):
    """The image mirrored left to right with probability 1/2 (each image of a batch)."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """The image upside down with probability 1/2 (each image of a batch)."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


# -- crops and pads -------------------------------------------------------------------------
def central_crop(image, central_fraction):
    """The central ``central_fraction`` (0, 1] of the image's height and width."""
    tf = _tf()
    with _ops.name_scope(None, "central_crop", [image]):
        image = _ops.convert_to_tensor(image, name="image")
        if central_fraction <= 0.0 or central_fraction > 1.0:
            raise ValueError("central_fraction must be within (0, 1]")
        if central_fraction == 1.0:
            return image
        rank = image.shape.ndims
        if rank not in (3, 4):
            raise ValueError(f"`image` should either be a Tensor with rank = 3 or rank = 4. Had "
                             f"rank = {rank}.")
        static = image.shape.as_tuple_or_none()
        off = rank - 3
        starts, sizes = [], []
        for i in (off, off + 1):
            dim = static[i]
            if dim is None:
                d = tf.cast(tf.shape(image)[i], dtypes.float64)
                start = tf.cast((d - d * central_fraction) / 2, dtypes.int32)
                size = tf.shape(image)[i] - start * 2
            else:
                start = int((float(dim) - float(dim) * central_fraction) / 2)
                size = dim - start * 2
            starts.append(start)
            sizes.append(size)
        begin = ([0] if rank == 4 else []) + starts + [0]
        size = ([-1] if rank == 4 else []) + sizes + [-1]
        out = tf.slice(image, tf.stack(begin), tf.stack(size))
        dims = [None if _is_tensor(s) else s for s in sizes]
        out.set_shape(TensorShape(([static[0]] if rank == 4 else []) + dims + [static[-1]]))
        return out


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The image in a zero canvas of target_height x target_width, its top left corner at
    (offset_height, offset_width)."""
    tf = _tf()
    with _ops.name_scope(None, "pad_to_bounding_box", [image]):
        image, is_batch = _as_batch(image)
        batch, height, width, depth = _dims(image)
        after_w = target_width - offset_width - width
        after_h = target_height - offset_height - height
        asserts = []
        _check(offset_height >= 0, "offset_height must be >= 0", asserts)
        _check(offset_width >= 0, "offset_width must be >= 0", asserts)
        _check(after_w >= 0, "width must be <= target - offset", asserts)
        _check(after_h >= 0, "height must be <= target - offset", asserts)
        if asserts:
            with _ops.control_dependencies(asserts):
                image = tf.identity(image)
        paddings = tf.reshape(tf.stack([0, 0, offset_height, after_h, offset_width, after_w,
                                        0, 0]), [4, 2])
        padded = tf.pad(image, paddings)
        padded.set_shape(TensorShape([None if _is_tensor(i) else i
                                      for i in (batch, target_height, target_width, depth)]))
        return _unbatch(padded, is_batch)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The target_height x target_width window of the image whose top left corner is at
    (offset_height, offset_width)."""
    tf = _tf()
    with _ops.name_scope(None, "crop_to_bounding_box", [image]):
        image, is_batch = _as_batch(image)
        batch, height, width, depth = _dims(image)
        asserts = []
        _check(offset_width >= 0, "offset_width must be >= 0.", asserts)
        _check(offset_height >= 0, "offset_height must be >= 0.", asserts)
        _check(target_width > 0, "target_width must be > 0.", asserts)
        _check(target_height > 0, "target_height must be > 0.", asserts)
        _check(width >= (target_width + offset_width), "width must be >= target + offset.", asserts)
        _check(height >= (target_height + offset_height), "height must be >= target + offset.",
               asserts)
        if asserts:
            with _ops.control_dependencies(asserts):
                image = tf.identity(image)
        cropped = tf.slice(image, tf.stack([0, offset_height, offset_width, 0]),
                           tf.stack([-1, target_height, target_width, -1]))
        cropped.set_shape(TensorShape([None if _is_tensor(i) else i
                                       for i in (batch, target_height, target_width, depth)]))
        return _unbatch(cropped, is_batch)


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """The image centred in target_height x target_width: cropped evenly where it is
    larger, padded with zeros evenly where it is smaller."""
    tf = _tf()

    def op2(fn, tensor_fn):
        return lambda x, y: tensor_fn(x, y) if _is_tensor(x) or _is_tensor(y) else fn(x, y)

    max_, min_ = op2(max, tf.maximum), op2(min, tf.minimum)
    with _ops.name_scope(None, "resize_image_with_crop_or_pad", [image]):
        image, is_batch = _as_batch(image)
        asserts = []
        _check(target_width > 0, "target_width must be > 0.", asserts)
        _check(target_height > 0, "target_height must be > 0.", asserts)
        if asserts:
            with _ops.control_dependencies(asserts):
                image = tf.identity(image)
        _, height, width, _ = _dims(image)
        width_diff, height_diff = target_width - width, target_height - height
        cropped = crop_to_bounding_box(image, max_(-height_diff // 2, 0), max_(-width_diff // 2, 0),
                                       min_(target_height, height), min_(target_width, width))
        resized = pad_to_bounding_box(cropped, max_(height_diff // 2, 0), max_(width_diff // 2, 0),
                                      target_height, target_width)
        return _unbatch(resized, is_batch)


def random_crop(value, size, seed=None, name=None):
    """A random ``size`` window of ``value`` (any rank), every window equally likely."""
    tf = _tf()
    with _ops.name_scope(name, "random_crop", [value, size]) as scope:
        value = _ops.convert_to_tensor(value, name="value")
        size = _ops.convert_to_tensor(size, dtype=dtypes.int32, name="size")
        shape = tf.shape(value)
        check = tf.Assert(tf.reduce_all(shape >= size),
                          ["Need value.shape >= size, got ", shape, size], summarize=1000)
        with _ops.control_dependencies([check]):
            shape = tf.identity(shape)
        limit = shape - size + 1
        offset = tf.random_uniform(tf.shape(shape), dtype=size.dtype, maxval=size.dtype.max,
                                   seed=seed) % limit
        return tf.slice(value, offset, size, name=scope)


# -- values ---------------------------------------------------------------------------------
def per_image_standardization(image):
    """Each image scaled to mean 0 and variance 1: (x - mean) / max(stddev, 1/sqrt(N))."""
    tf = _tf()
    with _ops.name_scope(None, "per_image_standardization", [image]) as scope:
        image = _ops.convert_to_tensor(image, name="image")
        if image.shape.ndims is not None and image.shape.ndims < 3:
            raise ValueError(f"'image' must be at least three-dimensional, got shape {image.shape}")
        num_pixels = tf.reduce_prod(tf.shape(image)[-3:])
        image = tf.cast(image, dtypes.float32)
        mean = tf.reduce_mean(image, axis=[-1, -2, -3], keepdims=True)
        variance = tf.nn.relu(tf.reduce_mean(tf.square(image), axis=[-1, -2, -3], keepdims=True)
                              - tf.square(mean))
        scale = tf.maximum(tf.sqrt(variance), tf.rsqrt(tf.cast(num_pixels, dtypes.float32)))
        return tf.div(tf.subtract(image, mean), scale, name=scope)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """The image in ``dtype``, rescaled: floats span [0, 1], integers [0, dtype.max]."""
    tf = _tf()
    image = _ops.convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    if dtype == image.dtype:
        return tf.identity(image, name=name)
    cast = tf.saturate_cast if saturate else tf.cast
    with _ops.name_scope(name, "convert_image", [image]) as scope:
        src = image.dtype
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = int(src.max), int(dtype.max)
            if scale_in > scale_out:
                return cast(tf.floordiv(image, (scale_in + 1) // (scale_out + 1)), dtype, name=scope)
            return tf.multiply(cast(image, dtype), (scale_out + 1) // (scale_in + 1), name=scope)
        if src.is_floating and dtype.is_floating:
            return tf.cast(image, dtype, name=scope)
        if src.is_integer:
            return tf.multiply(tf.cast(image, dtype), 1.0 / float(src.max), name=scope)
        return cast(tf.multiply(image, float(dtype.max) + 0.5), dtype, name=scope)


def _as_float(image):
    """(float image, original dtype): float16/32 as they are, others scaled to [0, 1]."""
    image = _ops.convert_to_tensor(image, name="image")
    if image.dtype in (dtypes.float16, dtypes.float32):
        return image, image.dtype
    return convert_image_dtype(image, dtypes.float32), image.dtype


def adjust_brightness(image, delta):
    """``delta`` added to every pixel (in [0, 1] units for integer images), dtype kept."""
    tf = _tf()
    with _ops.name_scope(None, "adjust_brightness", [image, delta]) as scope:
        flt, orig = _as_float(image)
        adjusted = tf.add(flt, tf.cast(delta, flt.dtype), name=scope)
        return convert_image_dtype(adjusted, orig, saturate=True)


def adjust_contrast(images, contrast_factor):
    """Each channel moved away from (or toward) its mean over the image by
    ``contrast_factor``: (x - mean) * factor + mean, dtype kept."""
    tf = _tf()
    with _ops.name_scope(None, "adjust_contrast", [images, contrast_factor]):
        flt, orig = _as_float(images)
        if flt.shape.ndims is not None and flt.shape.ndims < 3:
            raise ValueError(f"images must be at least 3-D [height, width, channels], got shape "
                             f"{flt.shape}")
        factor = tf.cast(contrast_factor, flt.dtype)
        mean = tf.reduce_mean(flt, axis=[-3, -2], keepdims=True)
        adjusted = tf.add(tf.multiply(tf.subtract(flt, mean), factor), mean)
        return convert_image_dtype(adjusted, orig, saturate=True)


def random_brightness(image, max_delta, seed=None):
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = _tf().random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """adjust_contrast by a factor drawn uniformly from [lower, upper)."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = _tf().random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def rgb_to_grayscale(images, name=None):
    """The luma of RGB images (last dimension 3 -> 1), TF's weights, dtype kept."""
    tf = _tf()
    with _ops.name_scope(name, "rgb_to_grayscale", [images]) as scope:
        images = _ops.convert_to_tensor(images, name="images")
        flt = convert_image_dtype(images, dtypes.float32)
        gray = tf.expand_dims(tf.tensordot(flt, [0.2989, 0.5870, 0.1140], [-1, -1]), -1)
        return convert_image_dtype(gray, images.dtype, name=scope)


def grayscale_to_rgb(images, name=None):
    """Grey images (last dimension 1) repeated into 3 channels."""
    tf = _tf()
    with _ops.name_scope(name, "grayscale_to_rgb", [images]) as scope:
        images = _ops.convert_to_tensor(images, name="images")
        dims = images.shape.as_tuple_or_none()
        if dims is not None and (len(dims) < 2 or dims[-1] not in (None, 1)):
            raise ValueError(f"Last dimension of a grayscale image should be size 1, got shape "
                             f"{images.shape}")
        multiples = tf.concat([tf.ones(tf.expand_dims(tf.rank(images) - 1, 0), dtypes.int32),
                               [3]], 0)
        rgb = tf.tile(images, multiples, name=scope)
        if dims is not None:
            rgb.set_shape(TensorShape(list(dims[:-1]) + [3]))
        return rgb
