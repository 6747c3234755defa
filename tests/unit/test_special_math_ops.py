"""lgamma, digamma, polygamma, erfc, xlogy and multiply_no_nan."""
import math

import numpy as np
import pytest

import dtf as tf
from tests.opcheck import check_against_reference, check_gradient, run

X = np.array([0.3, 1.0, 2.5, 7.0, 31.5, -0.5, -2.25])


def test_values():
    lg, dg, ec = run([tf.lgamma(X), tf.digamma(X), tf.math.erfc(X)])
    np.testing.assert_allclose(lg, [math.lgamma(v) for v in X], rtol=1e-12)
    np.testing.assert_allclose(ec, [math.erfc(v) for v in X], rtol=1e-12)
    # psi from central differences of lgamma
    h = 1e-6
    want = [(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in X]
    np.testing.assert_allclose(dg, want, rtol=1e-6)
    tri = run(tf.polygamma(1.0, X[:5]))
    want = [(r1 - r0) / (2 * h) for r0, r1 in zip(run(tf.digamma(X[:5] - h)), run(tf.digamma(X[:5] + h)))]
    np.testing.assert_allclose(tri, want, rtol=1e-5)
    assert math.isinf(run(tf.lgamma(0.0))) and math.isnan(run(tf.digamma(-1.0)))


def test_zero_safe_products():
    x = tf.constant([0.0, 2.0, 0.0, 3.0])
    y = tf.constant([0.0, 0.5, np.inf, 0.0])
    xl, mn = tf.math.xlogy(x, y), tf.math.multiply_no_nan(tf.constant([np.nan, 1.0, np.inf, 2.0]), y)
    np.testing.assert_allclose(run(xl), [0.0, 2 * math.log(0.5), 0.0, -np.inf])
    np.testing.assert_array_equal(run(mn), [0.0, 0.5, np.inf, 0.0])
    for t in (xl, mn):
        check_against_reference(t)
    with pytest.raises(TypeError, match="int32"):
        tf.lgamma(tf.constant([1, 2]))


@pytest.mark.parametrize("build", [
    lambda x, y: tf.lgamma(x) * 2.0, lambda x, y: tf.digamma(x) ** 2, lambda x, y: tf.math.erfc(x * y),
    lambda x, y: tf.math.xlogy(x, y * y), lambda x, y: tf.math.multiply_no_nan(x, y[:1]),
    lambda x, y: tf.polygamma(tf.constant(1.0, tf.float64), x + 1.0),
])
def test_gradients(build):
    check_gradient(build, [np.array([0.7, 1.5, 3.0]), np.array([0.5, -1.2, 2.0])], rtol=1e-4)


def test_rint_lbeta_and_monotonicity():
    np.testing.assert_array_equal(run(tf.math.rint([0.5, 1.5, -2.5, 2.7])), [0.0, 2.0, -2.0, 3.0])
    x = np.array([[1.0, 2.0, 3.5], [0.5, 0.5, 4.0]])
    want = [sum(math.lgamma(v) for v in row) - math.lgamma(sum(row)) for row in x]
    np.testing.assert_allclose(run(tf.lbeta(x)), want, rtol=1e-12)
    check_gradient(lambda t: tf.lbeta(t), [x], rtol=1e-4)
    assert run(tf.is_non_decreasing([1, 1, 2])) and not run(tf.math.is_strictly_increasing([1, 1, 2]))
    assert run(tf.is_strictly_increasing([[1], [4]])) and run(tf.is_non_decreasing([]))
