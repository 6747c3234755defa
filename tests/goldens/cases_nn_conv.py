"""tf.nn convolutions, pools and normalization beyond conv2d: values and gradients."""
import numpy as np

from tests.goldens.harness import case

F32 = np.float32


def _values_and_grads(tf, build, shapes, seed):
    """Runs build(*inputs) on random float32 inputs fed through placeholders; records the
    output and the gradients of sum(output * random weights) w.r.t. every input."""
    rng = np.random.RandomState(seed)
    phs = [tf.placeholder(tf.float32, s) for s in shapes]
    y = build(*phs)
    weights = tf.constant(rng.randn(*y.shape.as_list()).astype(F32))
    grads = tf.gradients(tf.reduce_sum(y * weights), phs)
    fetches = {"y": y, "shape": tf.shape(y)}
    fetches.update({f"d{i}": g for i, g in enumerate(grads)})
    return fetches, {p: rng.randn(*s).astype(F32) for p, s in zip(phs, shapes)}


@case(rtol=1e-4, atol=1e-4)
def conv1d_strided_same(tf):
    return _values_and_grads(tf, lambda x, w: tf.nn.conv1d(x, w, 2, "SAME"),
                             [(2, 9, 3), (3, 3, 4)], 0)


@case(rtol=1e-4, atol=1e-4)
def conv1d_valid_dilated(tf):
    return _values_and_grads(tf, lambda x, w: tf.nn.conv1d(x, w, 1, "VALID", dilations=2),
                             [(2, 9, 3), (3, 3, 2)], 1)


@case(rtol=1e-4, atol=1e-4)
def conv2d_dilated(tf):
    return _values_and_grads(
        tf, lambda x, w: tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME", dilations=[1, 2, 3, 1]),
        [(2, 7, 8, 3), (3, 2, 3, 4)], 2)


@case(rtol=1e-4, atol=1e-4)
def atrous_conv2d_same_and_valid(tf):
    def build(x, w):
        same = tf.nn.atrous_conv2d(x, w, 2, "SAME")
        valid = tf.nn.atrous_conv2d(x, w, 2, "VALID")
        return tf.concat([tf.reshape(same, [-1]), tf.reshape(valid, [-1])], 0)
    return _values_and_grads(tf, build, [(1, 7, 7, 2), (3, 3, 2, 3)], 3)


@case(rtol=1e-4, atol=1e-4)
def conv2d_transpose_strided(tf):
    return _values_and_grads(
        tf, lambda v, w: tf.nn.conv2d_transpose(v, w, [2, 7, 8, 3], [1, 2, 2, 1], "SAME"),
        [(2, 4, 4, 5), (3, 3, 3, 5)], 4)


@case(rtol=1e-4, atol=1e-4)
def depthwise_conv2d_strided(tf):
    return _values_and_grads(
        tf, lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
        [(2, 7, 6, 3), (3, 2, 3, 2)], 5)


@case(rtol=1e-4, atol=1e-4)
def depthwise_conv2d_rate(tf):
    return _values_and_grads(
        tf, lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", rate=[2, 2]),
        [(1, 8, 7, 2), (2, 2, 2, 3)], 6)


@case(rtol=1e-4, atol=1e-4)
def depthwise_conv2d_native_valid(tf):
    return _values_and_grads(
        tf, lambda x, w: tf.nn.depthwise_conv2d_native(x, w, [1, 1, 2, 1], "VALID"),
        [(2, 5, 6, 2), (3, 3, 2, 1)], 7)


@case(rtol=1e-4, atol=1e-4)
def separable_conv2d(tf):
    return _values_and_grads(
        tf, lambda x, d, p: tf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME"),
        [(2, 5, 5, 3), (3, 3, 3, 2), (1, 1, 6, 4)], 8)


@case(rtol=1e-4, atol=1e-4)
def conv3d_strided_same(tf):
    return _values_and_grads(
        tf, lambda x, w: tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "SAME"),
        [(2, 5, 4, 5, 2), (2, 3, 2, 2, 3)], 9)


@case(rtol=1e-4, atol=1e-4)
def conv3d_valid(tf):
    return _values_and_grads(
        tf, lambda x, w: tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "VALID"),
        [(1, 4, 4, 3, 2), (2, 2, 2, 2, 2)], 10)


@case(rtol=1e-4, atol=1e-4)
def pool3d(tf):
    def build(x):
        mx = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 1, 2, 1], "SAME")
        av = tf.nn.avg_pool3d(x, [1, 2, 3, 2, 1], [1, 1, 2, 2, 1], "SAME")
        av_valid = tf.nn.avg_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
        return tf.concat([tf.reshape(t, [-1]) for t in (mx, av, av_valid)], 0)
    return _values_and_grads(tf, build, [(2, 5, 4, 5, 3)], 11)


@case(rtol=1e-4, atol=1e-4)
def pool1d(tf):
    def build(x):
        mx = tf.nn.max_pool1d(x, 3, 2, "SAME")
        av = tf.nn.avg_pool1d(x, 2, 2, "VALID")
        return tf.concat([tf.reshape(mx, [-1]), tf.reshape(av, [-1])], 0)
    return _values_and_grads(tf, build, [(2, 9, 3)], 12)


@case(rtol=1e-4, atol=1e-5)
def moments_and_batch_normalization(tf):
    def build(x, offset, scale):
        mean, var = tf.nn.moments(x, [0, 1, 2])
        return tf.nn.batch_normalization(x, mean, var, offset, scale, 1e-3)
    return _values_and_grads(tf, build, [(3, 4, 2, 3), (3,), (3,)], 13)


@case(rtol=1e-4, atol=1e-4)
def fused_batch_norm_training(tf):
    rng = np.random.RandomState(14)
    x = tf.placeholder(tf.float32, [4, 3, 2, 3])
    scale, offset = tf.placeholder(tf.float32, [3]), tf.placeholder(tf.float32, [3])
    y, mean, var = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-6)
    w = tf.constant(rng.randn(4, 3, 2, 3).astype(F32))
    dx, dscale, doffset = tf.gradients(tf.reduce_sum(y * w), [x, scale, offset])
    feeds = {x: rng.randn(4, 3, 2, 3).astype(F32) * 2 + 1, scale: rng.rand(3).astype(F32) + 0.5,
             offset: rng.randn(3).astype(F32)}
    return {"y": y, "mean": mean, "var": var, "dx": dx, "dscale": dscale, "doffset": doffset}, feeds


@case(rtol=1e-4, atol=1e-4)
def fused_batch_norm_inference(tf):
    rng = np.random.RandomState(15)
    x = tf.placeholder(tf.float32, [2, 3, 3, 2])
    scale, offset = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [2])
    mean, var = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.float32, [2])
    y, m_out, v_out = tf.nn.fused_batch_norm(x, scale, offset, mean, var, is_training=False)
    w = tf.constant(rng.randn(2, 3, 3, 2).astype(F32))
    dx, dscale, doffset = tf.gradients(tf.reduce_sum(y * w), [x, scale, offset])
    feeds = {x: rng.randn(2, 3, 3, 2).astype(F32), scale: rng.rand(2).astype(F32) + 0.5,
             offset: rng.randn(2).astype(F32), mean: rng.randn(2).astype(F32),
             var: rng.rand(2).astype(F32) + 0.1}
    return {"y": y, "mean": m_out, "var": v_out, "dx": dx, "dscale": dscale,
            "doffset": doffset}, feeds


@case
def dropout_noise_shape_broadcasts_one_mask(tf):
    """Random streams differ between TF and dtf: what is compared is that a [1, 50] noise
    shape drops whole columns, kept ones scaled by 1 / keep_prob."""
    x = tf.ones([4, 50])
    y = tf.nn.dropout(x, keep_prob=0.5, noise_shape=[1, 50])
    rows_equal = tf.reduce_all(tf.equal(y, y[:1]))
    values_ok = tf.reduce_all(tf.logical_or(tf.equal(y, 0.0), tf.equal(y, 2.0)))
    return {"rows_equal": rows_equal, "values_ok": values_ok, "shape": tf.shape(y)}


@case(rtol=1e-4, atol=1e-4)
def conv3d_transpose(tf):
    return _values_and_grads(
        tf, lambda v, w: tf.nn.conv3d_transpose(v, w, [2, 5, 4, 6, 2], [1, 2, 1, 2, 1], "SAME"),
        [(2, 3, 4, 3, 3), (2, 3, 2, 2, 3)], 16)


@case(rtol=1e-4, atol=1e-4)
def convolution_by_rank(tf):
    def build(x1, w1, x2, w2):
        a = tf.nn.convolution(x1, w1, "SAME", strides=[2])
        b = tf.nn.convolution(x2, w2, "VALID", dilation_rate=[2, 1])
        return tf.concat([tf.reshape(a, [-1]), tf.reshape(b, [-1])], 0)
    return _values_and_grads(tf, build, [(2, 7, 2), (3, 2, 3), (1, 6, 5, 2), (2, 2, 2, 2)], 17)


@case(rtol=1e-4, atol=1e-5)
def moments_family(tf):
    def build(x, w, shift):
        count, m_ss, v_ss, _ = tf.nn.sufficient_statistics(x, [0, 1], shift=shift)
        mean, var = tf.nn.normalize_moments(count, m_ss, v_ss, shift)
        wm, wv = tf.nn.weighted_moments(x, [0, 2], w, keep_dims=True)
        old = tf.nn.batch_norm_with_global_normalization(x, mean, var, shift, shift * 2, 1e-3, True)
        parts = [mean, var, wm, wv, old]
        return tf.concat([tf.reshape(p, [-1]) for p in parts], 0)
    return _values_and_grads(tf, build, [(4, 3, 2), (4, 1, 2), (2,)], 18)


@case(rtol=1e-4, atol=1e-4)
def backprop_ops_called_directly(tf):
    rng = np.random.RandomState(19)
    x = tf.placeholder(tf.float32, [2, 5, 5, 3])
    w = tf.placeholder(tf.float32, [3, 3, 3, 2])
    dy = tf.placeholder(tf.float32, [2, 3, 3, 2])
    dw_ = tf.placeholder(tf.float32, [3, 3, 3, 2])
    dy_dw = tf.placeholder(tf.float32, [2, 3, 3, 6])
    x3 = tf.placeholder(tf.float32, [1, 4, 4, 4, 2])
    dy3 = tf.placeholder(tf.float32, [1, 2, 2, 2, 3])
    out = {
        "bi": tf.nn.conv2d_backprop_input([2, 5, 5, 3], w, dy, [1, 2, 2, 1], "SAME"),
        "bf": tf.nn.conv2d_backprop_filter(x, [3, 3, 3, 2], dy, [1, 2, 2, 1], "SAME"),
        "dbi": tf.nn.depthwise_conv2d_native_backprop_input([2, 5, 5, 3], dw_, dy_dw,
                                                            [1, 2, 2, 1], "SAME"),
        "dbf": tf.nn.depthwise_conv2d_native_backprop_filter(x, [3, 3, 3, 2], dy_dw,
                                                             [1, 2, 2, 1], "SAME"),
        "bf3": tf.nn.conv3d_backprop_filter_v2(x3, [2, 2, 2, 2, 3], dy3, [1, 2, 2, 2, 1],
                                               "VALID"),
    }
    feeds = {p: rng.randn(*p.shape.as_list()).astype(F32) for p in (x, w, dy, dw_, dy_dw, x3, dy3)}
    return out, feeds


@case(rtol=1e-4, atol=1e-4)
def max_pool_double_backprop(tf):
    """The gradient of a max-pool gradient w.r.t. its incoming gradient (WGAN-GP style)."""
    rng = np.random.RandomState(20)
    x2 = tf.placeholder(tf.float32, [2, 5, 4, 3])
    x3 = tf.placeholder(tf.float32, [1, 4, 3, 4, 2])
    out = {}
    for key, x, pool in (("p2", x2, lambda t: tf.nn.max_pool(t, [1, 2, 2, 1], [1, 2, 1, 1], "SAME")),
                         ("p3", x3, lambda t: tf.nn.max_pool3d(t, 2, 1, "VALID"))):
        y = pool(tf.tanh(x) * 3.0)
        u = tf.constant(rng.randn(*y.shape.as_list()).astype(F32))
        g = tf.gradients(tf.reduce_sum(y * u * y), x)[0]
        penalty = tf.reduce_sum(tf.square(g))
        out[key + "_g"] = g
        out[key + "_gg"] = tf.gradients(penalty, x)[0]
    feeds = {x2: rng.randn(2, 5, 4, 3).astype(F32), x3: rng.randn(1, 4, 3, 4, 2).astype(F32)}
    return out, feeds
