"""Reference semantics of Selu/SeluGrad and LRN/LRNGrad (local response normalization
across the last, channel, dimension)."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@reference("Selu", host=True)
def _selu(attrs, x):
    with np.errstate(over="ignore"):
        neg = SELU_SCALE * SELU_ALPHA * np.expm1(np.minimum(x, 0))
    return np.where(x > 0, SELU_SCALE * x, neg).astype(x.dtype)


@reference("SeluGrad", host=True)
def _selu_grad(attrs, g, y):
    return np.where(y < 0, g * (y + SELU_SCALE * SELU_ALPHA), g * SELU_SCALE).astype(g.dtype)


def _window_sums(v, r):
    """sum of v over channels [c - r, c + r] (clipped) for each channel c of the last axis."""
    c = v.shape[-1]
    padded = np.concatenate([np.zeros(v.shape[:-1] + (1,), v.dtype), np.cumsum(v, axis=-1)], axis=-1)
    hi = np.minimum(np.arange(c) + r + 1, c)
    lo = np.maximum(np.arange(c) - r, 0)
    return padded[..., hi] - padded[..., lo]


def lrn_args(attrs, x):
    if x.ndim != 4:
        raise errors.InvalidArgumentError(None, None, f"input must be 4-dimensional, got shape "
                                          f"{list(x.shape)}")
    return int(attrs.get("depth_radius", 5)), float(attrs.get("bias", 1.0)), \
        float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 0.5))


@reference("LRN", host=True)
def _lrn(attrs, x):
    r, bias, alpha, beta = lrn_args(attrs, x)
    xd = x.astype(np.float64)
    norm = bias + alpha * _window_sums(xd * xd, r)
    return (xd * norm ** -beta).astype(x.dtype)


@reference("LRNGrad", host=True)
def _lrn_grad(attrs, grads, x, y):
    """dx_j = g_j N_j^-beta - 2 alpha beta x_j sum_{i near j} g_i x_i N_i^(-beta-1), where
    N_i = bias + alpha * (sum of x^2 over the window of i); windows are symmetric."""
    r, bias, alpha, beta = lrn_args(attrs, x)
    xd, g = x.astype(np.float64), grads.astype(np.float64)
    norm = bias + alpha * _window_sums(xd * xd, r)
    inner = _window_sums(g * xd * norm ** (-beta - 1), r)
    return (g * norm ** -beta - 2 * alpha * beta * xd * inner).astype(x.dtype)
