"""CPU kernels of LRN and LRNGrad (local response normalization across channels), float32:
oneDNN's LRN primitive on NHWC tensors (.onednn_lrn) where its JIT kernels take the
parameters (beta 0.75 or 1, the CIFAR-10 tutorial's and AlexNet's), else numpy in float32
with the window sums as one product by a band matrix, as TensorFlow's CPU kernel computes
them; the numpy reference (dtf.kernels.reference.nn_extra, which defines the semantics, in
float64) for other dtypes.

Why: the reference takes a power per element in float64: 35-40 ms on 32x28x28x64, where
TensorFlow takes 2.4-2.7. There the product path takes about a tenth of the reference.
"""
from __future__ import annotations

import functools

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.nn_extra import lrn_args
from dtf.kernels.registry import register_kernel
from . import blas, onednn_lrn


@functools.lru_cache(maxsize=64)
def _band(channels, r, dtype):
    """[c, c] with ones where |i - j| <= r: rows @ band sums each channel's window."""
    i = np.arange(channels)
    return (np.abs(i[:, None] - i[None, :]) <= r).astype(dtype)


def _neg_power(n, beta):
    """n ** -beta in place, by the cheapest exact-enough route for the common betas."""
    if beta == 0.5:
        np.sqrt(n, out=n)
        return np.reciprocal(n, out=n)
    if beta == 1.0:
        return np.reciprocal(n, out=n)
    np.log(n, out=n)
    n *= -beta
    return np.exp(n, out=n)


def _norms(x2, r, bias, alpha):
    """bias + alpha * (the window sum of x^2), [rows, c]."""
    n = blas.matmul(np.square(x2), _band(x2.shape[1], r, x2.dtype))
    n *= x2.dtype.type(alpha)
    n += x2.dtype.type(bias)
    return n


def lrn_rows(x, r, bias, alpha, beta):
    """LRN of a channels-last array, in its dtype."""
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = _neg_power(_norms(x2, r, bias, alpha), beta)
    out *= x2
    return out.reshape(x.shape)


def lrn_grad_rows(g, x, r, bias, alpha, beta):
    """dx = g N^-beta - 2 alpha beta x window(g x N^(-beta-1)), N the norms (the reference's
    formula), in x's dtype."""
    c = x.shape[-1]
    x2 = np.ascontiguousarray(x).reshape(-1, c)
    g2 = np.ascontiguousarray(g).reshape(-1, c)
    n = _norms(x2, r, bias, alpha)
    p = _neg_power(n.copy(), beta)  # N^-beta
    t = g2 * x2
    t *= p
    t /= n  # g x N^(-beta-1)
    inner = blas.matmul(t, _band(c, r, x2.dtype))
    inner *= x2
    inner *= x2.dtype.type(-2.0 * alpha * beta)
    p *= g2
    p += inner
    return p.reshape(x.shape)


def _plain(*arrays):
    return all(type(a) is np.ndarray and a.dtype == np.float32 and a.size for a in arrays)


@register_kernel("LRN", "CPU", dtypes=(dtypes.float32,), label="oneDNN LRN, else a band product")
def lrn(node):
    attrs, ref = node.attrs, REFERENCE["LRN"]

    def compute(ctx, x):
        args = lrn_args(attrs, x)  # raises TF's error for a shape that is not 4-D
        if not _plain(x):
            return ref(attrs, x)
        out = onednn_lrn.lrn(x, *args)
        return lrn_rows(x, *args) if out is None else out

    return compute


@register_kernel("LRNGrad", "CPU", dtypes=(dtypes.float32,), label="oneDNN LRN, else a band product")
def lrn_grad(node):
    attrs, ref = node.attrs, REFERENCE["LRNGrad"]

    def compute(ctx, grads, x, y):
        args = lrn_args(attrs, x)
        if not _plain(grads, x) or grads.shape != x.shape:
            return ref(attrs, grads, x, y)
        out = onednn_lrn.lrn_grad(grads, x, *args)
        return lrn_grad_rows(grads, x, *args) if out is None else out

    return compute
