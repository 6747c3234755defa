"""Special functions and zero-safe products: lgamma, digamma, polygamma, erfc, xlogy,
multiply_no_nan; values and gradients."""
import numpy as np

from tests.goldens.harness import case


@case(rtol=1e-5, atol=1e-5)
def gamma_family_and_erfc(tf):
    x = tf.constant(np.array([0.3, 1.0, 2.5, 7.0, 31.5, -0.5, -2.25], np.float32))
    pos = tf.constant(np.array([0.2, 1.0, 2.5, 9.0], np.float64))
    out = {"lgamma": tf.lgamma(x), "digamma": tf.digamma(x), "erfc": tf.math.erfc(x),
           "trigamma": tf.polygamma(tf.constant(1.0, tf.float64), pos),
           "tetragamma": tf.math.polygamma(tf.constant(2.0, tf.float64), pos)}
    for key in ("lgamma", "digamma", "erfc"):
        out[f"d_{key}"], = tf.gradients(tf.reduce_sum(out[key] * tf.range(7.0)), [x])
    out["d_trigamma"], = tf.gradients(tf.reduce_sum(out["trigamma"]), [pos])
    return out


@case
def xlogy_and_multiply_no_nan(tf):
    rng = np.random.RandomState(0)
    x = tf.constant(np.array([[0.0, 2.0, 1.5], [0.0, -1.0, 3.0]], np.float32))
    y = tf.constant(np.abs(rng.randn(3)).astype(np.float32) + 0.1)
    z = tf.constant(np.array([[0.0, 1.0, 2.0]], np.float32))
    out = {"xlogy": tf.math.xlogy(x, y), "xlogy_zero_y": tf.math.xlogy(x, tf.zeros([3])),
           "mul_no_nan": tf.math.multiply_no_nan(x, z),
           "mul_no_nan_inf": tf.math.multiply_no_nan(tf.constant([np.inf, np.nan, 2.0]), tf.constant([0.0, 0.0, 3.0]))}
    out["d_xlogy_x"], out["d_xlogy_y"] = tf.gradients(tf.reduce_sum(out["xlogy"]), [x, y])
    out["d_mnn_x"], out["d_mnn_z"] = tf.gradients(tf.reduce_sum(out["mul_no_nan"] * 3.0), [x, z])
    return out


@case
def rint_lbeta_monotonic_histogram(tf):
    x = tf.constant(np.array([[1.0, 2.0, 3.5], [0.5, 0.5, 4.0]], np.float32))
    lb = tf.lbeta(x)
    d_lb, = tf.gradients(tf.reduce_sum(lb * [1.0, -2.0]), [x])
    values = tf.constant(np.array([-1.0, 0.0, 1.5, 2.0, 4.99, 5.0, 15.0], np.float32))
    return {"rint": tf.math.rint([0.5, 1.5, -2.5, 2.7]), "lbeta": lb, "d_lbeta": d_lb,
            "nondec": tf.is_non_decreasing([1, 1, 2]), "strict": tf.is_strictly_increasing([1, 1, 2]),
            "strict2": tf.math.is_strictly_increasing([[1], [4]]),
            "hist": tf.histogram_fixed_width(values, [0.0, 5.0], nbins=5),
            "hist64": tf.histogram_fixed_width(values, [-2.0, 20.0], nbins=3, dtype=tf.int64)}
