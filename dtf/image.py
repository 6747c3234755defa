"""tf.image: the codecs and resize ops (dtf/ops/image_ops.py) and the helpers of input
pipelines (dtf/ops/image_transforms.py)."""
from dtf.ops.image_ops import (  # noqa: F401
    decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png, resize_bilinear, resize_nearest_neighbor)
from dtf.ops.image_transforms import (  # noqa: F401
    ResizeMethod, adjust_brightness, adjust_contrast, random_brightness, random_contrast, central_crop, convert_image_dtype, crop_to_bounding_box, flip_left_right,
    flip_up_down, grayscale_to_rgb, pad_to_bounding_box, per_image_standardization,
    random_crop, random_flip_left_right, random_flip_up_down, resize_image_with_crop_or_pad,
    resize_images, rgb_to_grayscale, transpose_image)

