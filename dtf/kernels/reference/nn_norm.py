"""Reference semantics of fused batch norm: FusedBatchNorm/V2/V3 and their gradients
FusedBatchNormGrad/V2/V3, as TF's CPU kernels compute them.

Forward, training: y = (x - mean) / sqrt(var + epsilon) * scale + offset with the batch's
mean and biased variance; the ``batch_variance`` output is Bessel-corrected (n / (n - 1),
n / 1 for a single element), reserve_space_1/2 keep the mean and the biased variance for the
gradient. Inference: the given mean and variance normalize, and come back unchanged in
the four statistics outputs. V3's reserve_space_3 is empty on the CPU.

Gradient, training (reserve spaces = batch mean and biased variance):
dx = scale / sqrt(var + eps) * (dy - mean(dy) - xhat * mean(dy * xhat)), with xhat the
normalized x; inference (reserve spaces = the given mean and variance): dx = dy * scale /
sqrt(var + eps). Both: dscale = sum(dy * xhat), doffset = sum(dy). The last two outputs are
TF's placeholders (a zero scalar each).

Half inputs compute in float32 (``U``); statistics are float32 (float64 for float64 x).
Channels are the last axis for NHWC/NDHWC and axis 1 for NCHW/NCDHW.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from .table import reference

CHANNELS_LAST = ("NHWC", "NDHWC")
CHANNELS_FIRST = ("NCHW", "NCDHW")


def _fmt(attrs):
    fmt = attrs.get("data_format", "NHWC")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    if fmt not in CHANNELS_LAST + CHANNELS_FIRST:
        raise errors.InvalidArgumentError(None, None, f"FusedBatchNorm: unknown data_format {fmt!r}")
    return fmt


def stat_dtype(x):
    """The dtype statistics are computed and returned in (TF's ``U``)."""
    return np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)


def as_rows(x, fmt, what="x"):
    """x as a C-contiguous [rows, channels] matrix (a copy only for channels-first)."""
    if x.ndim not in (4, 5):
        raise errors.InvalidArgumentError(
            None, None, f"FusedBatchNorm: {what} must be 4-dimensional (or 5), got shape "
            f"{list(x.shape)}")
    if fmt in CHANNELS_FIRST:
        x = np.moveaxis(x, 1, -1)
    return np.ascontiguousarray(x).reshape(-1, x.shape[-1])


def from_rows(y2, shape, fmt):
    """Inverse of as_rows for an output of x's ``shape``."""
    if fmt in CHANNELS_FIRST:
        moved = (shape[0],) + tuple(shape[2:]) + (shape[1],)
        return np.ascontiguousarray(np.moveaxis(y2.reshape(moved), -1, 1))
    return y2.reshape(shape)


def check_vectors(channels, **vectors):
    """Each named vector must hold one value per channel (TF's InvalidArgumentError)."""
    for name, v in vectors.items():
        if v.ndim != 1 or v.shape[0] != channels:
            raise errors.InvalidArgumentError(
                None, None, f"FusedBatchNorm: {name} must be a vector of one value per channel ({channels}), "
                f"got shape {list(v.shape)}")


def epsilon(attrs):
    return float(attrs.get("epsilon", 1e-4))


def check_attrs(attrs):
    """Refuses what TF 1.15's op has no attribute for: a graph of later TF versions whose
    exponential_avg_factor folds moving averages into the op's statistics."""
    factor = attrs.get("exponential_avg_factor", 1.0)
    if float(factor) != 1.0:
        raise errors.UnimplementedError(
            None, None, f"FusedBatchNorm: exponential_avg_factor={factor} is not supported "
            f"(TF 1.15's op has no such attribute; only 1.0 runs)")


def _forward(attrs, x, scale, offset, mean, variance, v3):
    check_attrs(attrs)
    fmt, eps, training = _fmt(attrs), epsilon(attrs), bool(attrs.get("is_training", True))
    x2 = as_rows(x, fmt)
    rows, channels = x2.shape
    u = stat_dtype(x)
    if training:
        check_vectors(channels, scale=scale, offset=offset)
        xd = x2.astype(np.float64)
        if rows:
            m = xd.mean(axis=0)
            v = ((xd - m) ** 2).mean(axis=0)
        else:  # TF's kernel: no elements, no statistics
            m = v = np.full(channels, np.nan)
        batch_var = v * (rows / max(rows - 1, 1))
        stats = (m.astype(u), batch_var.astype(u), m.astype(u), v.astype(u))
    else:
        check_vectors(channels, scale=scale, offset=offset, mean=mean, variance=variance)
        m, v = mean.astype(np.float64), variance.astype(np.float64)
        stats = (mean.astype(u), variance.astype(u), mean.astype(u), variance.astype(u))
    inv = 1.0 / np.sqrt(v + eps)
    y2 = (x2.astype(np.float64) - m) * (inv * scale) + offset
    y = from_rows(y2.astype(x.dtype), x.shape, fmt)
    return (y,) + stats + ((np.zeros(0, u),) if v3 else ())


@reference("FusedBatchNorm", host=True)
def _fused_batch_norm(attrs, x, scale, offset, mean, variance):
    return _forward(attrs, x, scale, offset, mean, variance, False)


@reference("FusedBatchNormV2", host=True)
def _fused_batch_norm_v2(attrs, x, scale, offset, mean, variance):
    return _forward(attrs, x, scale, offset, mean, variance, False)


@reference("FusedBatchNormV3", host=True)
def _fused_batch_norm_v3(attrs, x, scale, offset, mean, variance):
    return _forward(attrs, x, scale, offset, mean, variance, True)


def _backward(attrs, dy, x, scale, saved_mean, saved_var):
    fmt, eps, training = _fmt(attrs), epsilon(attrs), bool(attrs.get("is_training", True))
    if dy.shape != x.shape:
        raise errors.InvalidArgumentError(
            None, None, f"FusedBatchNormGrad: y_backprop and x must have the same shape, got "
            f"{list(dy.shape)} and {list(x.shape)}")
    x2, dy2 = as_rows(x, fmt), as_rows(dy, fmt, "y_backprop")
    rows, channels = x2.shape
    check_vectors(channels, scale=scale, reserve_space_1=saved_mean, reserve_space_2=saved_var)
    u = stat_dtype(x)
    xd, g = x2.astype(np.float64), dy2.astype(np.float64)
    inv = 1.0 / np.sqrt(saved_var.astype(np.float64) + eps)
    xhat = (xd - saved_mean) * inv
    doffset = g.sum(axis=0)
    dscale = (g * xhat).sum(axis=0)
    if training:
        n = max(rows, 1)
        dx2 = (scale * inv) * (g - doffset / n - xhat * (dscale / n))
    else:
        dx2 = g * (scale * inv)
    dx = from_rows(dx2.astype(x.dtype), x.shape, fmt)
    return dx, dscale.astype(u), doffset.astype(u), np.zeros((), u), np.zeros((), u)


@reference("FusedBatchNormGrad", host=True)
def _fused_batch_norm_grad(attrs, dy, x, scale, rs1, rs2):
    return _backward(attrs, dy, x, scale, rs1, rs2)


@reference("FusedBatchNormGradV2", host=True)
def _fused_batch_norm_grad_v2(attrs, dy, x, scale, rs1, rs2):
    return _backward(attrs, dy, x, scale, rs1, rs2)


@reference("FusedBatchNormGradV3", host=True)
def _fused_batch_norm_grad_v3(attrs, dy, x, scale, rs1, rs2, rs3):
    return _backward(attrs, dy, x, scale, rs1, rs2)
