"""tf.nn.fused_batch_norm (FusedBatchNormV3 and its gradient op): values, the returned
statistics and gradients in training and inference, both layouts, a batch large enough for the CPU kernel's row chunks, half precision, and second
derivatives."""
import numpy as np

from tests.goldens.harness import case

F32 = np.float32


def _fused(tf, shape, seed, training=True, data_format="NHWC", epsilon=1e-3, dtype=F32,
           x_scale=2.0, x_shift=1.0):
    """Values, statistics and the gradients of sum(y * w) w.r.t. x, scale and offset."""
    rng = np.random.RandomState(seed)
    c = shape[1] if data_format == "NCHW" else shape[-1]
    tf_dtype = tf.float16 if dtype == np.float16 else tf.float32
    x = tf.placeholder(tf_dtype, shape)
    scale, offset = tf.placeholder(tf.float32, [c]), tf.placeholder(tf.float32, [c])
    feeds = {x: (rng.randn(*shape) * x_scale + x_shift).astype(dtype),
             scale: rng.rand(c).astype(F32) + 0.5, offset: rng.randn(c).astype(F32)}
    stats = {}
    if not training:
        mean, var = tf.placeholder(tf.float32, [c]), tf.placeholder(tf.float32, [c])
        feeds.update({mean: rng.randn(c).astype(F32), var: rng.rand(c).astype(F32) + 0.1})
        stats = dict(mean=mean, variance=var)
    y, m, v = tf.nn.fused_batch_norm(x, scale, offset, epsilon=epsilon, data_format=data_format,
                                     is_training=training, **stats)
    w = tf.constant(rng.randn(*shape).astype(dtype))
    dx, dscale, doffset = tf.gradients(tf.reduce_sum(y * w), [x, scale, offset])
    return {"y": y, "mean": m, "var": v, "dx": dx, "dscale": dscale, "doffset": doffset}, feeds


@case(rtol=1e-4, atol=1e-4)
def training_nhwc(tf):
    return _fused(tf, (4, 5, 3, 6), 0)


@case(rtol=1e-4, atol=5e-4)
def training_nhwc_large_batch(tf):
    """64x32x32x16: the ResNet step's shape, over many row chunks; a mean far from zero
    (20, standard deviation 0.5), where TensorFlow's float32 batch mean is 8.6e-5 from the
    exact one (dtf's float64 sums: 1e-6), which moves y by up to 2e-4. Every 97th element
    of y and dx is recorded (the whole would be 8 MB)."""
    fetches, feeds = _fused(tf, (64, 32, 32, 16), 1, x_scale=0.5, x_shift=20.0)
    for k in ("y", "dx"):
        fetches[k] = tf.reshape(fetches[k], [-1])[::97]
    del fetches["dscale"]  # below, at TensorFlow's own accuracy
    return fetches, feeds


@case(rtol=1e-3, atol=0.1)
def training_nhwc_large_batch_scale_gradient(tf):
    """The scale gradient of the case above, sums of 65,536 products of magnitude ~500:
    TensorFlow's float32 sums are up to 0.07 from the exact (float64) value, dtf's float64
    sums within 1e-4 of it."""
    fetches, feeds = _fused(tf, (64, 32, 32, 16), 1, x_scale=0.5, x_shift=20.0)
    return {"dscale": fetches["dscale"]}, feeds


@case(rtol=1e-4, atol=1e-4)
def training_nchw(tf):
    return _fused(tf, (3, 4, 5, 2), 2, data_format="NCHW")


@case(rtol=1e-4, atol=1e-4)
def training_single_element_per_channel(tf):
    """One value per channel: variance 0, Bessel correction by n / 1."""
    return _fused(tf, (1, 1, 1, 5), 4)


@case(rtol=1e-4, atol=1e-4)
def inference_nhwc(tf):
    return _fused(tf, (3, 4, 4, 5), 5, training=False)


@case(rtol=1e-4, atol=1e-4)
def inference_nchw(tf):
    return _fused(tf, (2, 3, 4, 5), 6, training=False, data_format="NCHW")


@case(rtol=2e-3, atol=2e-3)
def training_half(tf):
    return _fused(tf, (2, 4, 4, 3), 7, dtype=np.float16, x_scale=1.0, x_shift=0.5)


@case(rtol=1e-3, atol=1e-3)
def second_derivatives(tf):
    """d/d(x, scale) of sum(dx^2) + sum(dscale^2), dx and dscale the first gradient."""
    rng = np.random.RandomState(8)
    out = {}
    feeds = {}
    for training in (True, False):
        key = "train" if training else "infer"
        x = tf.placeholder(tf.float32, [3, 2, 2, 3])
        scale, offset = tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [3])
        feeds.update({x: rng.randn(3, 2, 2, 3).astype(F32) + 1, scale: rng.rand(3).astype(F32) + 0.5,
                      offset: rng.randn(3).astype(F32)})
        stats = {} if training else dict(mean=rng.randn(3).astype(F32),
                                         variance=rng.rand(3).astype(F32) + 0.5)
        y = tf.nn.fused_batch_norm(x, scale, offset, is_training=training, **stats)[0]
        w = tf.constant(rng.randn(3, 2, 2, 3).astype(F32))
        dx, dscale = tf.gradients(tf.reduce_sum(y * w), [x, scale])
        loss = tf.reduce_sum(dx * dx) + tf.reduce_sum(dscale * dscale)
        ddx, ddscale = tf.gradients(loss, [x, scale])
        out.update({f"{key}_ddx": ddx, f"{key}_ddscale": ddscale})
    return out, feeds
