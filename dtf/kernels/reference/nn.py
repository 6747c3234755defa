"""Reference semantics: nn ops (activations, softmax, cross-entropy, bias, conv2d, pooling).

Images are NHWC. Window geometry (output size and padding) follows TF exactly: SAME gives
ceil(in / stride) outputs and puts the odd padding pixel after (bottom/right).
"""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from dtf.framework.common_shapes import window_geometry

from .table import REFERENCE, reference


# -- window geometry (dtf.framework.common_shapes: shared with shape inference) -------------
def spatial_geometry(in_hw, k_hw, strides, padding):
    """((oh, ow), (pad_top, pad_left), (pad_bottom, pad_right)) for NHWC windows."""
    (oh, pt, pb), (ow, pl, pr) = (window_geometry(in_hw[i], k_hw[i], strides[i + 1], padding)
                                  for i in (0, 1))
    return (oh, ow), (pt, pl), (pb, pr)


def _attrs_geometry(attrs, x_shape, k_hw):
    return spatial_geometry(x_shape[1:3], k_hw, attrs["strides"], attrs["padding"])


def _windows(xp, oh, ow, kh, kw, strides):
    """Yields ((p, q), view) for each kernel offset: the [n, oh, ow, c] strided view of the
    padded input that offset (p, q) reads."""
    sh, sw = strides[1], strides[2]
    for p in range(kh):
        for q in range(kw):
            yield (p, q), xp[:, p:p + (oh - 1) * sh + 1:sh, q:q + (ow - 1) * sw + 1:sw, :]


def _crop(xp, pads_before, shape):
    (pt, pl) = pads_before
    return xp[:, pt:pt + shape[1], pl:pl + shape[2], :]


def _padded_shape(x_shape, out_hw, k_hw, strides):
    """A padded buffer just big enough for every window (VALID may leave input unread)."""
    return (x_shape[0], (out_hw[0] - 1) * strides[1] + k_hw[0],
            (out_hw[1] - 1) * strides[2] + k_hw[1], x_shape[3])


def _pad_to(x, pads_before, full_shape, value=0):
    """x placed at ``pads_before`` inside a buffer of ``full_shape`` (cropping any excess)."""
    out = np.full(full_shape, value, dtype=x.dtype)
    (pt, pl) = pads_before
    h = min(x.shape[1], full_shape[1] - pt)
    w = min(x.shape[2], full_shape[2] - pl)
    out[:, pt:pt + h, pl:pl + w, :] = x[:, :h, :w, :]
    return out


def lowest(dtype):
    """The value padding takes in max pooling: it never wins a window."""
    return -np.inf if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min


# -- activations ------------------------------------------------------------------------------
def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _leaky_relu(a, x):
    """x where x > 0, else alpha * x: max(x, alpha x) for alpha <= 1, min for alpha > 1
    (the same values, NaN included, without np.where's branch per element: on 2M float32
    9.4 ms with np.where, 1.2 ms this way)."""
    out = np.asarray(np.multiply(x, np.asarray(a.get("alpha", 0.2), x.dtype)))  # 0-d: an array
    return (np.maximum if float(a.get("alpha", 0.2)) <= 1 else np.minimum)(x, out, out=out)


def _elu(a, x):
    """x where x >= 0, else expm1(x): expm1(min(x, 0)) + max(x, 0), given x's sign (so
    -0.0 stays -0.0); 2.5 ms against np.where's 11 on 2M float32."""
    zero = np.zeros((), x.dtype)
    out = np.asarray(np.expm1(np.minimum(x, zero)))  # 0-d: an array, so out= works
    out += np.maximum(x, zero)
    return np.copysign(out, x, out=out)


def _elu_grad(a, g, y):
    """g * (y + 1) where y < 0, else g: g * (fmin(y, 0) + 1), exact either way (fmin gives
    0 for NaN, so a NaN output passes g, as under the comparison)."""
    out = np.asarray(np.fmin(y, np.zeros((), y.dtype)))
    out += np.ones((), y.dtype)
    if out.shape == np.shape(g):
        out *= g
        return out
    return np.multiply(out, g)  # g and y broadcast against each other


def _softplus(a, x):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)), numpy's logaddexp(0, x) formula
    with its vectorized exp and log1p (logaddexp calls them per element: 32 ms against 4.6
    on 2M float32; the two agree to 3e-7)."""
    t = np.asarray(np.abs(x))  # 0-d: an array, so out= works
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    t += np.maximum(x, np.zeros((), x.dtype))
    return t


ACTIVATIONS = {
    "Relu": lambda a, x: np.maximum(x, np.zeros((), x.dtype)),
    "Relu6": lambda a, x: np.clip(x, 0, 6).astype(x.dtype),
    "LeakyRelu": _leaky_relu,
    "Elu": _elu,
    "Softplus": _softplus,
    "Softsign": lambda a, x: (x / (1 + np.abs(x))).astype(x.dtype),
}
# grad op -> d(activation) as a function of (attrs, incoming gradient, features or outputs)
ACTIVATION_GRADS = {
    "ReluGrad": lambda a, g, f: g * (f > 0),
    "Relu6Grad": lambda a, g, f: g * ((f > 0) & (f < 6)),
    "LeakyReluGrad": lambda a, g, f: np.where(f > 0, g, g * np.asarray(a.get("alpha", 0.2), g.dtype)),
    "EluGrad": _elu_grad,
    "SoftplusGrad": lambda a, g, f: g * _sigmoid(f),
    "SoftsignGrad": lambda a, g, f: g / np.square(1 + np.abs(f)),
}
for _op, _fn in {**ACTIVATIONS, **ACTIVATION_GRADS}.items():
    REFERENCE[_op] = (lambda fn: lambda attrs, *xs: np.asarray(fn(attrs, *xs)).astype(xs[0].dtype, copy=False))(_fn)


# -- softmax and cross-entropy ------------------------------------------------------------------
def _log_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


@reference("Softmax")
def _softmax(attrs, x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return (e / np.sum(e, axis=-1, keepdims=True)).astype(x.dtype)


@reference("LogSoftmax")
def _log_softmax_ref(attrs, x):
    return _log_softmax(x).astype(x.dtype)


def check_xent_shapes(logits, labels):
    if logits.ndim != 2 or logits.shape != labels.shape:
        raise ValueError(f"logits and labels must be same size: logits_size={list(logits.shape)} "
                         f"labels_size={list(labels.shape)}")


@reference("SoftmaxCrossEntropyWithLogits")
def _softmax_xent(attrs, logits, labels):
    check_xent_shapes(logits, labels)
    log_p = _log_softmax(logits)
    loss = -np.sum(labels * log_p, axis=-1)
    return loss.astype(logits.dtype), (np.exp(log_p) - labels).astype(logits.dtype)


def check_sparse_xent(logits, labels):
    """Shapes must pair one label with each row of logits, and every label must index a
    class (TF's runtime check, naming the label and the range)."""
    if logits.ndim != 2 or labels.shape != logits.shape[:1]:
        raise ValueError(f"logits and labels must have the same first dimension, got logits shape "
                         f"{list(logits.shape)} and labels shape {list(labels.shape)}")
    num_classes = logits.shape[1]
    bad = (labels < 0) | (labels >= num_classes)
    if np.any(bad):
        raise errors.InvalidArgumentError(
            None, None, f"Received a label value of {int(labels[bad][0])} which is outside the valid "
            f"range of [0, {num_classes}).  Label values: {' '.join(str(int(v)) for v in labels)}")


# Per (rows, classes): the flat index of each row's first logit (read-only, shared).
_ROW_STARTS: dict = {}
_UNSIGNED = {np.dtype(np.int32): np.dtype(np.uint32), np.dtype(np.int64): np.dtype(np.uint64)}


def _row_starts(n, classes):
    starts = _ROW_STARTS.get((n, classes))
    if starts is None:
        if len(_ROW_STARTS) > 64:  # batch sizes rarely vary; never let it grow unbounded
            _ROW_STARTS.clear()
        starts = np.arange(0, n * classes, classes)
        starts.flags.writeable = False
        _ROW_STARTS[(n, classes)] = starts
    return starts


def _sparse_labels_ok(logits, labels):
    """Shapes pair and every label indexes a class, in one reduction: a negative label
    read as unsigned is larger than any class count."""
    if logits.ndim != 2 or labels.shape != logits.shape[:1]:
        return False
    unsigned = _UNSIGNED.get(labels.dtype)
    if unsigned is None or labels.size == 0:
        return labels.size == 0
    return int(labels.view(unsigned).max()) < logits.shape[1]


@reference("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent(attrs, logits, labels):
    if not _sparse_labels_ok(logits, labels):
        check_sparse_xent(logits, labels)  # raises TF's error (or passes odd label dtypes)
    # loss = log(sum(exp(shifted))) - shifted[label], backprop = softmax - one_hot(label), as
    # TF's kernel computes them: one exp pass, in-place updates and flat indices (this runs
    # every step of a small model until Numba's loops load: 20 us against 38 for the
    # log-softmax form on 64x10 float32).
    n, classes = logits.shape
    # C order whatever the logits' layout: the flat views below must be views, not copies.
    shifted = np.subtract(logits, np.maximum.reduce(logits, axis=-1, keepdims=True), order="C")
    backprop = np.exp(shifted)
    total = np.add.reduce(backprop, axis=-1, keepdims=True)
    picked = _row_starts(n, classes) + labels
    loss = np.log(total.reshape(-1))
    loss -= shifted.reshape(-1)[picked]
    backprop /= total
    backprop.reshape(-1)[picked] -= 1
    return loss.astype(logits.dtype, copy=False), backprop.astype(logits.dtype, copy=False)


@reference("InTopKV2")
def _in_top_k(attrs, predictions, targets, k):
    n, classes = predictions.shape
    valid = (targets >= 0) & (targets < classes)
    target_pred = predictions[np.arange(n), np.where(valid, targets, 0)]
    # Ties straddling the boundary count as in the top k: only strictly larger ones push out.
    larger = np.sum(predictions > target_pred[:, None], axis=1)
    return valid & np.isfinite(target_pred) & (larger < int(k))


# -- bias and l2 ------------------------------------------------------------------------------------
def _channel_axis(attrs, ndim):
    return 1 if attrs.get("data_format", "NHWC") == "NCHW" else ndim - 1


@reference("BiasAdd")
def _bias_add(attrs, x, bias):
    axis = _channel_axis(attrs, x.ndim)
    if x.shape[axis] != bias.shape[0]:
        raise ValueError(f"Must provide as many biases as the channel dimension of the input "
                         f"tensor: {list(bias.shape)} vs. {list(x.shape)}")
    shape = [1] * x.ndim
    shape[axis] = -1
    return x + bias.reshape(shape)


@reference("BiasAddGrad")
def _bias_add_grad(attrs, g):
    axis = _channel_axis(attrs, g.ndim)
    return np.sum(g, axis=tuple(i for i in range(g.ndim) if i != axis)).astype(g.dtype)


@reference("L2Loss")
def _l2_loss(attrs, x):
    return np.asarray(np.sum(np.square(x)) / 2, dtype=x.dtype)


# -- conv2d -----------------------------------------------------------------------------------------
def check_conv_shapes(x_shape, w_shape):
    if len(x_shape) != 4 or len(w_shape) != 4 or x_shape[3] != w_shape[2]:
        raise ValueError(f"input depth must match filter depth: input {list(x_shape)} vs. "
                         f"filter {list(w_shape)}")


@reference("Conv2D")
def conv2d(attrs, x, w):
    check_conv_shapes(x.shape, w.shape)
    kh, kw = w.shape[:2]
    out_hw, before, _ = _attrs_geometry(attrs, x.shape, (kh, kw))
    xp = _pad_to(x, before, _padded_shape(x.shape, out_hw, (kh, kw), attrs["strides"]))
    out = np.zeros((x.shape[0], *out_hw, w.shape[3]), x.dtype)
    for (p, q), view in _windows(xp, *out_hw, kh, kw, attrs["strides"]):
        out += view @ w[p, q]
    return out


@reference("Conv2DBackpropInput")
def conv2d_backprop_input(attrs, input_sizes, w, dy):
    shape = tuple(int(d) for d in input_sizes)
    check_conv_shapes(shape, w.shape)
    kh, kw = w.shape[:2]
    out_hw, before, _ = _attrs_geometry(attrs, shape, (kh, kw))
    dxp = np.zeros(_padded_shape(shape, out_hw, (kh, kw), attrs["strides"]), dy.dtype)
    for (p, q), view in _windows(dxp, *out_hw, kh, kw, attrs["strides"]):
        view += dy @ w[p, q].T
    return _pad_to(_crop(dxp, before, shape), (0, 0), shape)


@reference("Conv2DBackpropFilter")
def conv2d_backprop_filter(attrs, x, filter_sizes, dy):
    shape = tuple(int(d) for d in filter_sizes)
    check_conv_shapes(x.shape, shape)
    kh, kw = shape[:2]
    out_hw, before, _ = _attrs_geometry(attrs, x.shape, (kh, kw))
    xp = _pad_to(x, before, _padded_shape(x.shape, out_hw, (kh, kw), attrs["strides"]))
    dw = np.zeros(shape, dy.dtype)
    for (p, q), view in _windows(xp, *out_hw, kh, kw, attrs["strides"]):
        dw[p, q] = np.tensordot(view, dy, axes=([0, 1, 2], [0, 1, 2]))
    return dw


# -- pooling ------------------------------------------------------------------------------------------
def _pool_geometry(attrs, x_shape):
    k_hw = tuple(attrs["ksize"][1:3])
    out_hw, before, _ = _attrs_geometry(attrs, x_shape, k_hw)
    return k_hw, out_hw, before, _padded_shape(x_shape, out_hw, k_hw, attrs["strides"])


@reference("MaxPool")
def max_pool(attrs, x):
    k_hw, out_hw, before, full = _pool_geometry(attrs, x.shape)
    xp = _pad_to(x, before, full, lowest(x.dtype))
    views = [v for _, v in _windows(xp, *out_hw, *k_hw, attrs["strides"])]
    return np.max(np.stack(views), axis=0).astype(x.dtype)


@reference("MaxPoolGrad")
def max_pool_grad(attrs, x, y, dy):
    """The gradient goes to the first maximum of each window in row-major order (TF CPU)."""
    k_hw, out_hw, before, full = _pool_geometry(attrs, x.shape)
    xp = _pad_to(x, before, full, lowest(x.dtype))
    dxp = np.zeros(full, dy.dtype)
    windows = list(_windows(dxp, *out_hw, *k_hw, attrs["strides"]))
    winner = np.argmax(np.stack([v for _, v in _windows(xp, *out_hw, *k_hw, attrs["strides"])]), axis=0)
    for i, (_, view) in enumerate(windows):
        view += np.where(winner == i, dy, 0)
    return _pad_to(_crop(dxp, before, x.shape), (0, 0), x.shape)


def _avg_counts(x_shape, attrs):
    """Number of real (unpadded) inputs under each output window."""
    k_hw, out_hw, before, full = _pool_geometry(attrs, x_shape)
    ones = _pad_to(np.ones((1, *x_shape[1:3], 1)), before, (1, *full[1:3], 1))
    return sum(v for _, v in _windows(ones, *out_hw, *k_hw, attrs["strides"]))


@reference("AvgPool")
def avg_pool(attrs, x):
    k_hw, out_hw, before, full = _pool_geometry(attrs, x.shape)
    xp = _pad_to(x, before, full)
    total = sum(v.astype(np.float64) for _, v in _windows(xp, *out_hw, *k_hw, attrs["strides"]))
    return (total / _avg_counts(x.shape, attrs)).astype(x.dtype)


@reference("AvgPoolGrad")
def avg_pool_grad(attrs, orig_input_shape, dy):
    shape = tuple(int(d) for d in orig_input_shape)
    k_hw, out_hw, before, full = _pool_geometry(attrs, shape)
    share = dy / _avg_counts(shape, attrs)
    dxp = np.zeros(full, dy.dtype)
    for _, view in _windows(dxp, *out_hw, *k_hw, attrs["strides"]):
        view += share.astype(dy.dtype)
    return _pad_to(_crop(dxp, before, shape), (0, 0), shape)


@reference("TopKV2", host=True)
def _top_k(attrs, x, k):
    k = int(k)
    if x.ndim < 1:
        raise ValueError(f"input must be at least 1-dimensional, got shape {list(x.shape)}")
    n = x.shape[-1]
    if not 0 <= k <= n:
        raise ValueError(f"input must have at least k={k} columns, has {n}")
    # Largest first, equal values by lower index: a stable ascending sort of the reversed
    # row, read backwards.
    order = np.argsort(np.flip(x, -1), axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1 - order).astype(np.int32)
    return np.take_along_axis(x, indices, axis=-1), indices
