"""Reference semantics of the special functions (Lgamma, Digamma, Polygamma, Erfc), Rint,
Xlogy and MulNoNan. numpy has no gamma-family functions, so digamma and polygamma use
the recurrence up to x >= 10 followed by the asymptotic series (about 1e-14 relative error
in float64), with the reflection formula for negative x."""
from __future__ import annotations

import math

import numpy as np

from .table import reference


def _per_element(fn, x):
    out = np.vectorize(fn, otypes=[np.float64])(x.astype(np.float64)) if x.size else x.astype(np.float64)
    return np.asarray(out).astype(x.dtype)


def _lgamma(v):
    try:
        return math.lgamma(v)
    except ValueError:  # a pole (0, -1, -2, ...): TF gives +inf
        return math.inf


def _digamma(v):
    if math.isnan(v) or (v <= 0 and v == math.floor(v)):
        return math.nan
    if v < 0:  # reflection: psi(1 - x) - psi(x) = pi cot(pi x)
        return _digamma(1.0 - v) - math.pi / math.tan(math.pi * v)
    acc = 0.0
    while v < 10.0:
        acc -= 1.0 / v
        v += 1.0
    inv2 = 1.0 / (v * v)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132)))))
    return acc + math.log(v) - 0.5 / v - series


# Bernoulli numbers B2, B4, ... B14 for the Euler-Maclaurin tail of the Hurwitz zeta.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _hurwitz_zeta(s, q):
    """zeta(s, q) = sum_k (q + k)^-s for integer s > 1 and q not a non-positive integer
    (a negative q adds its first terms explicitly, as TF's kernel allows)."""
    n = 12 + max(0, math.ceil(-q))
    total = sum((q + k) ** -s for k in range(n))
    a = q + n
    total += a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    term, fact = s * a ** (-s - 1), 1.0
    for j, b in enumerate(_BERNOULLI, start=1):
        fact *= (2 * j) * (2 * j - 1) if j > 1 else 2
        total += b / fact * term
        term *= (s + 2 * j - 1) * (s + 2 * j) / (a * a)
    return total


def _polygamma(n, v):
    if n == 0:
        return _digamma(v)
    if n < 0 or n != math.floor(n) or (v <= 0 and v == math.floor(v)):
        return math.nan
    return (-1) ** (n + 1) * math.factorial(int(n)) * _hurwitz_zeta(n + 1, v)


reference("Lgamma", host=True)(lambda attrs, x: _per_element(_lgamma, x))
reference("Digamma", host=True)(lambda attrs, x: _per_element(_digamma, x))
reference("Erfc", host=True)(lambda attrs, x: _per_element(math.erfc, x))
reference("Rint", host=True)(lambda attrs, x: np.rint(x))


@reference("Polygamma", host=True)
def _polygamma_ref(attrs, a, x):
    a, x = np.broadcast_arrays(a, x)
    out = np.vectorize(_polygamma, otypes=[np.float64])(a.astype(np.float64), x.astype(np.float64)) \
        if x.size else np.zeros(x.shape)
    return np.asarray(out).astype(x.dtype)


@reference("Xlogy", host=True)
def _xlogy(attrs, x, y):
    with np.errstate(all="ignore"):
        out = np.where(x == 0, np.zeros((), x.dtype), x * np.log(y))
    return np.asarray(out).astype(x.dtype)


@reference("MulNoNan", host=True)
def _mul_no_nan(attrs, x, y):
    with np.errstate(all="ignore"):
        out = np.where(y == 0, np.zeros((), x.dtype), x * y)
    return np.asarray(out).astype(x.dtype)
