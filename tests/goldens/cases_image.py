"""tf.image: PNG/JPEG decoding of files TensorFlow wrote (tests/fixtures/images), encode_png
round trips, resizing (bilinear, nearest; align_corners, half_pixel_centers) with
gradients, and the crop/pad/flip/standardize/convert helpers of input pipelines."""
import os

import numpy as np

from tests.goldens.harness import case

IMAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures",
                      "images")


def _file(name):
    with open(os.path.join(IMAGES, name), "rb") as f:
        return f.read()


def _img(seed=0, shape=(4, 5, 3)):
    return np.random.RandomState(seed).rand(*shape).astype(np.float32)


@case
def decode_png(tf):
    out = {}
    for name in ("rgb", "gray", "rgba"):
        data = tf.constant(_file(f"{name}.png"))
        out[name] = tf.image.decode_png(data)
        out[f"{name}_c1"] = tf.image.decode_png(data, channels=1)
        out[f"{name}_c3"] = tf.image.decode_png(data, channels=3)
        out[f"{name}_c4"] = tf.image.decode_png(data, channels=4)
    for name in ("gray16", "rgb16"):
        data = tf.constant(_file(f"{name}.png"))
        out[name] = tf.image.decode_png(data, dtype=tf.uint16)
        out[f"{name}_as8"] = tf.image.decode_png(data)
    out["image_png"] = tf.image.decode_image(tf.constant(_file("rgb.png")))
    return out


@case
def decode_jpeg(tf):
    photo, gray = tf.constant(_file("photo.jpg")), tf.constant(_file("gray.jpg"))
    return {"photo": tf.image.decode_jpeg(photo), "photo_c1": tf.image.decode_jpeg(photo, 1),
            "gray": tf.image.decode_jpeg(gray), "gray_c3": tf.image.decode_jpeg(gray, 3),
            "image_jpeg": tf.image.decode_image(photo, channels=3)}


@case
def encode_png_round_trip(tf):
    rng = np.random.RandomState(3)
    rgb = rng.randint(0, 256, (3, 4, 3)).astype(np.uint8)
    g16 = rng.randint(0, 65536, (2, 5, 1)).astype(np.uint16)
    return {"rgb": tf.image.decode_png(tf.image.encode_png(rgb)),
            "g16": tf.image.decode_png(tf.image.encode_png(g16), dtype=tf.uint16),
            "rgba": tf.image.decode_png(tf.image.encode_png(rgb[..., :2].repeat(2, -1)), 4)}


@case(rtol=1e-5, atol=1e-5)
def resize(tf):
    img = tf.constant(_img(1, (1, 4, 5, 2)))
    u8 = tf.constant(np.random.RandomState(2).randint(0, 256, (3, 4, 1)).astype(np.uint8))
    out = {}
    for size in ((7, 3), (2, 8), (1, 1)):
        key = f"{size[0]}x{size[1]}"
        out[f"bilinear_{key}"] = tf.image.resize_images(img, size)
        out[f"bilinear_ac_{key}"] = tf.image.resize_images(img, size, align_corners=True)
        out[f"nearest_{key}"] = tf.image.resize_images(
            img, size, method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
        out[f"nearest_ac_{key}"] = tf.image.resize_nearest_neighbor(img, size, align_corners=True)
        out[f"bilinear_hp_{key}"] = tf.image.resize_bilinear(img, size, half_pixel_centers=True)
        out[f"nearest_hp_{key}"] = tf.image.resize_nearest_neighbor(img, size,
                                                                    half_pixel_centers=True)
    out["u8_bilinear"] = tf.image.resize_images(u8, [5, 6])
    out["u8_nearest"] = tf.image.resize_images(u8, [5, 6], method=1)
    out["aspect"] = tf.image.resize_images(u8, [8, 8], preserve_aspect_ratio=True)
    return out


@case(rtol=1e-5, atol=1e-5)
def resize_gradients(tf):
    x = tf.constant(_img(4, (2, 3, 4, 1)))
    w = tf.constant(_img(5, (2, 5, 7, 1)))
    out = {}
    for name, y in (("bilinear", tf.image.resize_bilinear(x, [5, 7])),
                    ("bilinear_ac", tf.image.resize_bilinear(x, [5, 7], align_corners=True)),
                    ("bilinear_hp", tf.image.resize_bilinear(x, [5, 7], half_pixel_centers=True)),
                    ("nearest", tf.image.resize_nearest_neighbor(x, [5, 7])),
                    ("nearest_ac", tf.image.resize_nearest_neighbor(x, [5, 7], align_corners=True)),
                    ("nearest_hp", tf.image.resize_nearest_neighbor(x, [5, 7],
                                                                    half_pixel_centers=True))):
        out[name], = tf.gradients(tf.reduce_sum(y * w), [x])
    down, = tf.gradients(tf.reduce_sum(tf.image.resize_bilinear(w, [3, 4]) * x), [w])
    out["down"] = down
    return out


@case
def crop_pad_flip(tf):
    img = tf.constant(_img(6, (5, 6, 2)))
    batch = tf.constant(_img(7, (2, 4, 3, 1)))
    return {
        "flip_lr": tf.image.flip_left_right(img), "flip_ud": tf.image.flip_up_down(img),
        "flip_lr_batch": tf.image.flip_left_right(batch),
        "transpose": tf.image.transpose_image(img),
        "central": tf.image.central_crop(img, 0.5), "central_batch": tf.image.central_crop(batch, 0.6),
        "pad": tf.image.pad_to_bounding_box(img, 1, 2, 8, 9),
        "crop": tf.image.crop_to_bounding_box(img, 1, 2, 3, 2),
        "crop_batch": tf.image.crop_to_bounding_box(batch, 1, 0, 2, 2),
        "crop_or_pad_big": tf.image.resize_image_with_crop_or_pad(img, 7, 8),
        "crop_or_pad_small": tf.image.resize_image_with_crop_or_pad(img, 3, 3),
        "crop_or_pad_mixed": tf.image.resize_image_with_crop_or_pad(img, 2, 9),
        "gray": tf.image.rgb_to_grayscale(tf.constant(_img(8, (2, 3, 3)))),
        "gray_rgb": tf.image.grayscale_to_rgb(tf.constant(_img(9, (2, 2, 1)))),
    }


@case(rtol=1e-5, atol=1e-5)
def standardize_and_convert(tf):
    img = tf.constant(_img(10, (3, 4, 3)) * 100.0)
    u8 = tf.constant(np.arange(0, 256, 17, dtype=np.uint8).reshape(4, 4, 1))
    flat = tf.constant(np.full((2, 2, 1), 7, np.uint8))
    f = tf.constant(np.array([[-0.5, 0.0], [0.5, 1.2]], np.float32))
    return {"standard": tf.image.per_image_standardization(img),
            "standard_u8": tf.image.per_image_standardization(u8),
            "standard_flat": tf.image.per_image_standardization(flat),
            "u8_to_f": tf.image.convert_image_dtype(u8, tf.float32),
            "f_to_u8": tf.image.convert_image_dtype(f, tf.uint8),
            "f_to_u8_sat": tf.image.convert_image_dtype(f, tf.uint8, saturate=True),
            "u8_to_i32": tf.image.convert_image_dtype(u8, tf.int32),
            "u8_to_u16": tf.image.convert_image_dtype(u8, tf.uint16),
            "u16_to_u8": tf.image.convert_image_dtype(
                tf.constant(np.array([0, 255, 256, 65535], np.uint16)), tf.uint8),
            "f_to_f64": tf.image.convert_image_dtype(f, tf.float64)}


@case
def random_crop_and_flip(tf):
    img = np.arange(5 * 6 * 2, dtype=np.float32).reshape(5, 6, 2)
    crop = tf.image.random_crop(tf.constant(img), [3, 4, 2], seed=3)
    flip = tf.image.random_flip_left_right(tf.constant(img), seed=4)
    flip_ud = tf.image.random_flip_up_down(tf.constant(img), seed=5)

    def run(sess):
        crops, flips = [sess.run(crop) for _ in range(8)], [sess.run(flip) for _ in range(20)]
        ud = [sess.run(flip_ud) for _ in range(20)]
        windows = {(i, j): img[i:i + 3, j:j + 4] for i in range(3) for j in range(3)}
        return {"crop_shape": crops[0].shape,
                "crops_are_windows": all(any(np.array_equal(c, w) for w in windows.values())
                                         for c in crops),
                "flips_valid": all(np.array_equal(f, img) or np.array_equal(f, img[:, ::-1])
                                   for f in flips),
                "flips_both_ways": len({f[0, 0, 0] for f in flips}) == 2,
                "ud_valid": all(np.array_equal(f, img) or np.array_equal(f, img[::-1]) for f in ud)}
    return run


@case(rtol=1e-5, atol=1e-5)
def brightness_and_contrast(tf):
    img = tf.constant(_img(11, (3, 4, 3)))
    u8 = tf.constant(np.random.RandomState(12).randint(0, 256, (2, 3, 4, 3)).astype(np.uint8))
    bright = tf.image.random_brightness(img, 0.2, seed=1)
    contrast = tf.image.random_contrast(img, 0.5, 1.5, seed=2)

    def run(sess):
        out = sess.run({"bright": tf.image.adjust_brightness(img, 0.25),
                        "bright_u8": tf.image.adjust_brightness(u8, -0.3),
                        "contrast": tf.image.adjust_contrast(img, 1.7),
                        "contrast_u8": tf.image.adjust_contrast(u8, 0.4),
                        "contrast_batch": tf.image.adjust_contrast(u8[:, :, :, :1], 2.5)})
        base = sess.run(img)
        shifts = [sess.run(bright) - base for _ in range(5)]
        out["random_brightness_uniform_shift"] = all(
            np.allclose(s, s.flat[0], atol=1e-6) and abs(s.flat[0]) <= 0.2 for s in shifts)
        factors = []
        for _ in range(5):
            got = sess.run(contrast)
            mean = base.mean(axis=(0, 1), keepdims=True)
            factors.append(((got - mean) / (base - mean)).ravel())
        out["random_contrast_one_factor"] = all(
            np.allclose(f, f[0], atol=1e-3) and 0.5 <= f[0] < 1.5 for f in factors)
        return out
    return run


@case
def encode_jpeg_then_decode(tf):
    """The pixels of a JPEG each library writes, read back by its own decoder: the
    encoders agree where the compressed data does (the headers may differ)."""
    rng = np.random.RandomState(13)
    photo = (np.linspace(0, 255, 12 * 10 * 3).reshape(12, 10, 3)
             + rng.randint(0, 30, (12, 10, 3))).clip(0, 255).astype(np.uint8)
    gray = photo[..., :1]
    return {"default": tf.image.decode_jpeg(tf.image.encode_jpeg(photo)),
            "q50_444": tf.image.decode_jpeg(tf.image.encode_jpeg(photo, quality=50,
                                                                 chroma_downsampling=False)),
            "gray": tf.image.decode_jpeg(tf.image.encode_jpeg(gray, quality=80)),
            "progressive": tf.image.decode_jpeg(tf.image.encode_jpeg(photo, progressive=True))}
