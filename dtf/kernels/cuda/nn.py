"""Softmax, log-softmax, the two softmax cross-entropies and InTopKV2 on CUDA: one thread
per row (max-shifted, so large logits never overflow)."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from dtf.kernels.reference.nn import check_sparse_xent, check_xent_shapes
from dtf.kernels.registry import register_kernel
from . import device as D
from .elementwise import FLOATS


@cuda.jit(device=True)
def _row_stats(x, r, cols):
    """(max, log of the sum of exp(x - max)) of row ``r`` of the flat matrix ``x``."""
    base = r * cols
    top = x[base]
    for j in range(1, cols):
        top = max(top, x[base + j])
    total = 0.0
    for j in range(cols):
        total += math.exp(x[base + j] - top)
    return top, math.log(total)


@cuda.jit
def _softmax(x, out, rows, cols, log):
    r = cuda.grid(1)
    step = cuda.gridsize(1)
    while r < rows:
        top, log_sum = _row_stats(x, r, cols)
        for j in range(cols):
            v = x[r * cols + j] - top - log_sum
            out[r * cols + j] = v if log else math.exp(v)
        r += step


@cuda.jit
def _xent(logits, labels, loss, backprop, rows, cols):
    r = cuda.grid(1)
    step = cuda.gridsize(1)
    while r < rows:
        top, log_sum = _row_stats(logits, r, cols)
        acc = 0.0
        for j in range(cols):
            k = r * cols + j
            log_p = logits[k] - top - log_sum
            acc -= labels[k] * log_p
            backprop[k] = math.exp(log_p) - labels[k]
        loss[r] = acc
        r += step


@cuda.jit
def _sparse_xent(logits, labels, loss, backprop, rows, cols):
    r = cuda.grid(1)
    step = cuda.gridsize(1)
    while r < rows:
        top, log_sum = _row_stats(logits, r, cols)
        for j in range(cols):
            k = r * cols + j
            backprop[k] = math.exp(logits[k] - top - log_sum)
        label = labels[r]
        loss[r] = log_sum + top - logits[r * cols + label]
        backprop[r * cols + label] -= 1
        r += step


def _softmax_factory(log):
    def factory(node):
        def compute(ctx, x):
            x = D.to_device(x)
            if len(x.shape) < 1:
                raise ValueError(f"logits must have >= 1 dimension, got {list(x.shape)}")
            out = D.empty(x.shape, x.dtype)
            cols = x.shape[len(x.shape) - 1]
            rows = x.size // cols if cols else 0
            if rows:
                _softmax[D.grid(rows)](D.flat(x), D.flat(out), rows, cols, log)
            return out

        return compute

    return factory


register_kernel("Softmax", "GPU", dtypes=FLOATS, label="cuda row")(_softmax_factory(False))
register_kernel("LogSoftmax", "GPU", dtypes=FLOATS, label="cuda row")(_softmax_factory(True))


@register_kernel("SoftmaxCrossEntropyWithLogits", "GPU", dtypes=FLOATS, label="cuda row")
def softmax_xent(node):
    def compute(ctx, logits, labels):
        logits, labels = D.to_device(logits), D.to_device(labels)
        check_xent_shapes(logits, labels)
        rows, cols = logits.shape
        loss, backprop = D.empty((rows,), logits.dtype), D.empty(logits.shape, logits.dtype)
        if rows and cols:
            _xent[D.grid(rows)](D.flat(logits), D.flat(labels), loss, D.flat(backprop), rows, cols)
        return loss, backprop

    return compute


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", "GPU", dtypes=FLOATS, label="cuda row")
def sparse_softmax_xent(node):
    def compute(ctx, logits, labels):
        logits = D.to_device(logits)
        # Labels are validated on the host (they are small, and usually fed from it).
        host_labels = np.asarray(D.to_host(labels))
        check_sparse_xent(logits, host_labels)
        rows, cols = logits.shape
        loss, backprop = D.empty((rows,), logits.dtype), D.empty(logits.shape, logits.dtype)
        if rows:
            _sparse_xent[D.grid(rows)](D.flat(logits), D.to_device(host_labels), loss, D.flat(backprop),
                                       rows, cols)
        return loss, backprop

    return compute


@cuda.jit
def _in_top_k(pred, targets, out, classes, k):
    """A target is in the top k unless k predictions of its row are strictly larger (ties
    at the boundary count as in); a target out of range or a non-finite one is not."""
    r = cuda.grid(1)
    step = cuda.gridsize(1)
    while r < out.size:
        t = targets[r]
        hit = False
        if 0 <= t < classes:
            v = pred[r * classes + t]
            if math.isfinite(v):
                larger = 0
                for j in range(classes):
                    if pred[r * classes + j] > v:
                        larger += 1
                hit = larger < k
        out[r] = hit
        r += step


@register_kernel("InTopKV2", "GPU", dtypes=("int32", "int64"), label="cuda row")
def in_top_k(node):
    def compute(ctx, predictions, targets, k):
        predictions, targets = D.to_device(predictions), D.to_device(targets)
        rows, classes = predictions.shape
        out = D.empty((rows,), np.bool_)
        if rows:
            _in_top_k[D.grid(rows)](D.flat(predictions), targets, out, classes, D.host_ints(k)[0])
        return out

    return compute
