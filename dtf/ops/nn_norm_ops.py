"""tf.nn normalization: batch_normalization, fused_batch_norm, the older
batch_norm_with_global_normalization, and the moments family (sufficient_statistics,
normalize_moments, weighted_moments), all built from registered ops so their gradients and
kernels come from the ops they are made of.

fused_batch_norm follows TF's FusedBatchNormV3 exactly where a program can see it: epsilon
is raised to at least 1.001e-5, training returns the batch mean and the Bessel-corrected
batch variance (while normalizing with the biased one), inference returns the given mean
and variance, and no gradient flows into the returned statistics nor, in inference, into
the given mean and variance (TF's gradient returns None for them). It is one
FusedBatchNormV3 op (FusedBatchNorm and V2 are registered too, for imported graphs), whose
kernels make one pass for the statistics and one for the output (the composite of moments
and batch_normalization took a third of a small ResNet's step); its gradient is one
FusedBatchNormGradV3 op (gradients in nn_norm_grad).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops, math_ops, reduction_ops, slicing_ops
from .common import convert
from .reduction_ops import reduce_prod

__all__ = ["batch_normalization", "fused_batch_norm", "batch_norm_with_global_normalization",
           "sufficient_statistics", "normalize_moments", "weighted_moments"]

_MIN_FUSED_EPSILON = 1.001e-5
_CHANNELS_FIRST = ("NCHW", "NCDHW")


# -- the fused ops: shape functions --------------------------------------------------------------
def _attr_str(attrs, key, default):
    v = attrs.get(key, default)
    return v.decode() if isinstance(v, bytes) else v


def _shape_error(op_type, attrs, rule):
    return ValueError(f"{rule} for '{attrs.get('_op_name', op_type)}' (op: '{op_type}')")


def _channels(op_type, attrs, x, vectors):
    """The channel count (None if unknown) after checking x's rank and that every named
    vector is rank 1 of that length, as TF's FusedBatchNorm shape functions do."""
    fmt = _attr_str(attrs, "data_format", "NHWC")
    if fmt not in ("NHWC", "NCHW", "NDHWC", "NCDHW"):
        raise _shape_error(op_type, attrs, f"Invalid data_format {fmt!r}")
    c = None
    dims = x.shape.as_tuple_or_none()
    if dims is not None:
        if len(dims) not in (4, 5):
            raise _shape_error(op_type, attrs, f"Shape must be rank 4 (or 5) but is rank {len(dims)}")
        c = dims[1] if fmt in _CHANNELS_FIRST else dims[-1]
    for name, v in vectors:
        vd = v.shape.as_tuple_or_none()
        if vd is None:
            continue
        if len(vd) != 1:
            raise _shape_error(op_type, attrs, f"Shape of {name} must be rank 1 but is rank {len(vd)}")
        if c is not None and vd[0] is not None and vd[0] != c:
            raise _shape_error(op_type, attrs, f"Dimensions must be equal, but are {c} and {vd[0]} "
                               f"({name} against the channels of x)")
        c = c if c is not None else vd[0]
    return c


def _forward_infer(op_type, n_out):
    def infer(inputs, attrs):
        x, scale, offset, mean, variance = inputs
        vectors = [("scale", scale), ("offset", offset)]
        if not attrs.get("is_training", True):
            vectors += [("mean", mean), ("variance", variance)]
        c = _channels(op_type, attrs, x, vectors)
        u = attrs.get("U", x.dtype)
        out = [(x.dtype, x.shape)] + [(u, TensorShape([c]))] * 4
        return out + [(u, unknown_shape())] * (n_out - 5)

    return infer


def _grad_infer(op_type):
    def infer(inputs, attrs):
        dy, x, scale, rs1, rs2 = inputs[:5]
        c = _channels(op_type, attrs, x, [("scale", scale), ("reserve_space_1", rs1),
                                           ("reserve_space_2", rs2)])
        if dy.shape.ndims is not None and x.shape.ndims is not None and \
                not dy.shape.is_compatible_with(x.shape):
            raise _shape_error(op_type, attrs, f"y_backprop and x must have the same shape, got "
                               f"{dy.shape} and {x.shape}")
        u = attrs.get("U", x.dtype)
        return [(x.dtype, x.shape), (u, TensorShape([c])), (u, TensorShape([c])),
                (u, unknown_shape()), (u, unknown_shape())]

    return infer


for _op, _n in (("FusedBatchNorm", 5), ("FusedBatchNormV2", 5), ("FusedBatchNormV3", 6)):
    register_op(_op)(_forward_infer(_op, _n))
for _op in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"):
    register_op(_op)(_grad_infer(_op))


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) / sqrt(variance + variance_epsilon) * scale + offset, broadcasting."""
    with _ops.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert(x, "x")
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        shift = offset - mean * inv if offset is not None else -mean * inv
        return x * math_ops.cast(inv, x.dtype) + math_ops.cast(shift, x.dtype)


def batch_norm_with_global_normalization(t=None, m=None, v=None, beta=None, gamma=None,
                                        variance_epsilon=None, scale_after_normalization=None,
                                        name=None, input=None, mean=None, variance=None):  # noqa: A002
    """The old batch norm op: batch_normalization, scaled by gamma only when asked."""
    t = input if t is None else t
    m = mean if m is None else m
    v = variance if v is None else v
    return batch_normalization(t, m, v, beta, gamma if scale_after_normalization else None,
                               variance_epsilon, name)


def _keep(keep_dims, keepdims):
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    return bool(keepdims if keepdims is not None else keep_dims)


def sufficient_statistics(x, axes, shift=None, keep_dims=None, name=None, keepdims=None):
    """(count, sum(x - shift), sum((x - shift)**2), shift) over ``axes``."""
    keep = _keep(keep_dims, keepdims)
    with _ops.name_scope(name, "sufficient_statistics", [x, shift]):
        x = convert(x, "x")
        counts = _count(x, axes)
        if shift is not None:
            shift = convert(shift, "shift", dtype=x.dtype)
            m_ss, v_ss = x - shift, math_ops.squared_difference(x, shift)
        else:
            m_ss, v_ss = x, math_ops.square(x)
        m_ss = reduction_ops.reduce_sum(m_ss, axes, keepdims=keep, name="mean_ss")
        v_ss = reduction_ops.reduce_sum(v_ss, axes, keepdims=keep, name="var_ss")
    return counts, m_ss, v_ss, shift


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    """(mean, variance) from sufficient statistics."""
    with _ops.name_scope(name, "normalize", [counts, mean_ss, variance_ss, shift]):
        divisor = math_ops.reciprocal(counts, name="divisor")
        if shift is not None:
            shifted_mean = math_ops.multiply(mean_ss, divisor, name="shifted_mean")
            mean = math_ops.add(shifted_mean, shift, name="mean")
        else:
            shifted_mean = mean = math_ops.multiply(mean_ss, divisor, name="mean")
        variance = math_ops.subtract(math_ops.multiply(variance_ss, divisor),
                                     math_ops.square(shifted_mean), name="variance")
    return mean, variance


def weighted_moments(x, axes, frequency_weights, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over ``axes``, each element counted by its broadcast weight."""
    keep = _keep(keep_dims, keepdims)
    with _ops.name_scope(name, "weighted_moments", [x, frequency_weights, axes]):
        x = convert(x, "x")
        weights = convert(frequency_weights, "frequency_weights")
        half = x.dtype == dtypes.float16
        if half:
            x = math_ops.cast(x, dtypes.float32)
        if weights.dtype != x.dtype:
            weights = math_ops.cast(weights, x.dtype)
        # Reductions keep their dims so the mean broadcasts against x.
        weighted_sum = reduction_ops.reduce_sum(weights * x, axes, keepdims=True,
                                                name="weighted_input_sum")
        sum_of_weights = reduction_ops.reduce_sum(weights + array_ops.zeros_like(x), axes,
                                                  keepdims=True, name="sum_of_weights")
        divisor = math_ops.reciprocal(sum_of_weights, name="inv_weight_sum")
        mean = weighted_sum * divisor
        distsq = reduction_ops.reduce_sum(weights * math_ops.squared_difference(x, mean), axes,
                                          keepdims=True, name="weighted_distsq")
        variance = distsq * divisor
        if not keep:
            mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
        if half:
            mean, variance = math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def _channel_layout(data_format, ndims):
    """(axes reduced over, shape that broadcasts a [C] vector) for NHWC/NCHW (and 5-D)."""
    if data_format in ("NHWC", "NDHWC"):
        return list(range(ndims - 1)), [-1]
    if data_format in ("NCHW", "NCDHW"):
        return [0] + list(range(2, ndims)), [-1] + [1] * (ndims - 2)
    raise ValueError(f"data_format must be one of NHWC, NCHW, NDHWC, NCDHW, got {data_format!r}")


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    """Batch normalization of a 4-D (or 5-D) ``x`` over all but the channel axis.

    Returns ``(y, batch_mean, batch_variance)``: in training the statistics of this batch
    (variance Bessel-corrected; ``mean`` and ``variance`` are ignored), otherwise ``mean``
    and ``variance`` themselves.
    """
    with _ops.name_scope(name, "FusedBatchNormV3", [x, scale, offset, mean, variance]) as scope:
        x = convert(x, "input")
        if x.shape.ndims not in (None, 4, 5):
            raise ValueError(f"fused_batch_norm: input must be 4-dimensional (or 5), got shape "
                             f"{x.shape}")
        if x.shape.ndims is None:
            raise ValueError("fused_batch_norm needs an input of known rank")
        _channel_layout(data_format, x.shape.ndims)  # raises on an unknown data_format
        # Half-precision inputs are normalized in float32, with float32 scale and offset (TF).
        compute = dtypes.float32 if x.dtype == dtypes.float16 else x.dtype
        scale = convert(scale, "scale", dtype=compute)
        offset = convert(offset, "offset", dtype=compute)
        if is_training:
            # A given mean and variance are ignored, as by TF's kernel in graph mode.
            mean = variance = _ops.convert_to_tensor([], dtype=compute)
        elif mean is None or variance is None:
            raise ValueError("fused_batch_norm: mean and variance must be given when "
                             "is_training is False")
        else:
            mean = convert(mean, "mean", dtype=compute)
            variance = convert(variance, "variance", dtype=compute)
        attrs = {"T": x.dtype, "U": compute, "epsilon": max(float(epsilon), _MIN_FUSED_EPSILON),
                 "data_format": data_format, "is_training": bool(is_training)}
        op = _ops.make_op("FusedBatchNormV3", [x, scale, offset, mean, variance], attrs,
                          name=scope)
        return op.outputs[0], op.outputs[1], op.outputs[2]


def _count(x, axes):
    """Elements per channel, as a float tensor of x's dtype (static when known)."""
    dims = x.shape.as_tuple_or_none()
    if dims is not None and all(dims[a] is not None for a in axes):
        n = 1
        for a in axes:
            n *= dims[a]
        return _ops.convert_to_tensor(float(n), dtype=x.dtype)
    shape = array_ops.shape(x)
    return math_ops.cast(reduce_prod(slicing_ops.gather(shape, axes)), x.dtype)


from . import nn_norm_grad  # noqa: E402,F401  (registers the fused ops' gradients)
