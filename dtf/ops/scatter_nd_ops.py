"""N-d indexing: gather_nd, scatter_nd and tensor_scatter_{update,add,sub}, with TF's
gradients (dense, built from the same two ops)."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .array_ops import _apply, _shape_error, _who
from .common import shape_from_tensor

__all__ = ["gather_nd", "scatter_nd", "tensor_scatter_update", "tensor_scatter_add",
           "tensor_scatter_sub", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
           "tensor_scatter_nd_sub"]


def _index_depth(indices, target_dims, op_type, attrs, inputs):
    """K, the length of the innermost dimension of ``indices`` (None when unknown);
    ValueError when it exceeds the rank of the indexed tensor."""
    idims = indices.shape.as_tuple_or_none()
    if idims is None:
        return None
    if not idims:
        raise _shape_error(_who(op_type, attrs), inputs, "Shape must be at least rank 1 but is rank 0")
    k = idims[-1]
    if k is not None and target_dims is not None and k > len(target_dims):
        raise _shape_error(_who(op_type, attrs), inputs, f"indices.shape[-1] must be <= params.rank, "
                           f"but saw indices shape: {list(idims)} and params shape: {list(target_dims)}")
    return k


@register_op("GatherNd")
def _gather_nd_infer(inputs, attrs):
    params, indices = inputs
    pdims = params.shape.as_tuple_or_none()
    k = _index_depth(indices, pdims, "GatherNd", attrs, inputs)
    if k is None or pdims is None:
        return [(params.dtype, unknown_shape())]
    return [(params.dtype, TensorShape(indices.shape.as_tuple_or_none()[:-1] + pdims[k:]))]


def gather_nd(params, indices, name=None, batch_dims=0):
    """Slices of ``params`` addressed by the rows of ``indices``' innermost dimension:
    out[i...] = params[indices[i..., :]]. With ``batch_dims`` = b the first b dimensions
    of both are batch dimensions: out[b..., i...] = params[b..., indices[b..., i..., :]]."""
    if batch_dims != 0:
        return _batch_gather_nd(params, indices, batch_dims, name)
    return _apply("GatherNd", name, [(params, "params", None), (indices, "indices", dtypes.int32)],
                  lambda p, i: {"Tparams": p.dtype, "Tindices": i.dtype}).outputs[0]


def _batch_gather_nd(params, indices, batch_dims, name):
    """gather_nd over b batch dimensions, as one GatherNd: the batch dimensions are
    flattened into one and each index row gets its batch position prepended (so GatherNd's
    range check still applies to the rest)."""
    from . import array_ops as A
    from .common import convert
    from .math_ops import cast

    with _ops.name_scope(name, "GatherNd", [params, indices]) as scope:
        params = convert(params, "params")
        indices = convert(indices, "indices", hint=dtypes.int32)
        b, ni = int(batch_dims), indices.shape.ndims
        if ni is None or params.shape.ndims is None:
            raise ValueError("gather_nd with batch_dims needs params and indices of known rank")
        if b < 0:
            b += ni
        if not 0 < b < ni or b >= params.shape.ndims:
            raise ValueError(f"batch_dims = {batch_dims} must be less than the ranks of indices "
                             f"({ni}) and params ({params.shape.ndims})")
        if not params.shape[:b].is_compatible_with(indices.shape[:b]):
            raise ValueError(f"params.shape[:{b}] {params.shape[:b]} and indices.shape[:{b}] "
                             f"{indices.shape[:b]} must be equal (the batch dimensions)")
        pshape, ishape = A.shape(params, out_type=indices.dtype), A.shape(indices)
        from .reduction_ops import reduce_prod
        n = reduce_prod(ishape[:b])
        flat_params = A.reshape(params, A.concat([[-1], pshape[b:]], 0))
        flat_indices = A.reshape(indices, A.concat([[-1], ishape[b:]], 0))
        # batch position of every index row, broadcast to flat_indices[..., :1]
        pos = A.reshape(A.range(n), A.concat([[-1], A.ones_like(ishape[b:])], 0))
        pos = cast(pos, indices.dtype) * A.ones_like(flat_indices[..., :1])
        out = gather_nd(flat_params, A.concat([pos, flat_indices], -1))
        k = indices.shape.as_tuple_or_none()[-1]
        result = A.reshape(out, A.concat([ishape[:-1], pshape[b + k:]] if k is not None else
                                         [ishape[:-1], A.shape(out)[ni - b:]], 0), name=scope)
        if k is not None:
            result.set_shape(indices.shape[:-1].concatenate(params.shape[b + k:]))
        return result


def _check_updates(indices, updates, dims, op_type, attrs, inputs):
    """updates must have shape indices.shape[:-1] + dims[K:] where all are known."""
    idims, udims = indices.shape.as_tuple_or_none(), updates.shape.as_tuple_or_none()
    k = _index_depth(indices, dims, op_type, attrs, inputs)
    if None in (idims, udims, k, dims):
        return
    want = TensorShape(list(idims[:-1]) + list(dims[k:]))
    if not want.is_compatible_with(updates.shape):
        raise _shape_error(_who(op_type, attrs), inputs, f"updates has shape {list(udims)} but "
                           f"indices.shape[:-1] + shape[{k}:] is {want.as_tuple_or_none()}")


@register_op("ScatterNd")
def _scatter_nd_infer(inputs, attrs):
    indices, updates, shape = inputs
    out = shape_from_tensor(shape)
    _check_updates(indices, updates, out.as_tuple_or_none(), "ScatterNd", attrs, inputs)
    return [(updates.dtype, out)]


def scatter_nd(indices, updates, shape, name=None):
    """A tensor of zeros of ``shape`` with ``updates`` added at ``indices`` (duplicates sum).
    ``shape`` takes the indices' integer type, as TF's op requires."""
    from .common import convert

    with _ops.name_scope(name, "ScatterNd", [indices, updates, shape]) as scope:
        indices = convert(indices, "indices", hint=dtypes.int32)
        updates = convert(updates, "updates")
        shape = convert(shape, "shape", dtype=None if isinstance(shape, _ops.Tensor) else indices.dtype)
        if shape.dtype != indices.dtype:
            raise TypeError(f"Input 'shape' of 'ScatterNd' Op has type {shape.dtype.name} that does "
                            f"not match type {indices.dtype.name} of argument 'indices'.")
        return _ops.make_tensor("ScatterNd", [indices, updates, shape],
                                {"T": updates.dtype, "Tindices": indices.dtype}, name=scope)


def _tensor_scatter_infer(op_type):
    def infer(inputs, attrs):
        tensor, indices, updates = inputs
        _check_updates(indices, updates, tensor.shape.as_tuple_or_none(), op_type, attrs, inputs)
        return [(tensor.dtype, tensor.shape)]
    return infer


def _tensor_scatter(op_type):
    def fn(tensor, indices, updates, name=None):
        return _apply(op_type, name, [(tensor, "tensor", None), (indices, "indices", dtypes.int32),
                                      (updates, "updates", None)],
                      lambda t, i, u: {"T": t.dtype, "Tindices": i.dtype}).outputs[0]
    fn.__doc__ = _TENSOR_SCATTERS[op_type]
    return fn


_TENSOR_SCATTERS = {
    "TensorScatterUpdate": "A copy of ``tensor`` with the slices at ``indices`` replaced by ``updates``.",
    "TensorScatterAdd": "A copy of ``tensor`` with ``updates`` added at ``indices`` (duplicates sum).",
    "TensorScatterSub": "A copy of ``tensor`` with ``updates`` subtracted at ``indices``.",
}
for _op in _TENSOR_SCATTERS:
    register_op(_op)(_tensor_scatter_infer(_op))
tensor_scatter_update = tensor_scatter_nd_update = _tensor_scatter("TensorScatterUpdate")
tensor_scatter_add = tensor_scatter_nd_add = _tensor_scatter("TensorScatterAdd")
tensor_scatter_sub = tensor_scatter_nd_sub = _tensor_scatter("TensorScatterSub")


def batch_gather(params, indices, axis, batch_dims, name=None):
    """tf.gather with batch_dims != 0, as gather_nd over the same batch dimensions (the
    gathered axis is moved next to them first, and back after)."""
    from . import array_ops as A
    from .common import convert

    with _ops.name_scope(name, "GatherV2", [params, indices]):
        params = convert(params, "params")
        indices = convert(indices, "indices", hint=dtypes.int32)
        ni, npr = indices.shape.ndims, params.shape.ndims
        if ni is None or npr is None:
            raise ValueError("gather with batch_dims needs params and indices of known rank")
        axis = batch_dims if axis is None else axis  # TF takes the raw value: -1 is params' last
        b = batch_dims + ni if batch_dims < 0 else batch_dims
        axis = axis + npr if axis < 0 else axis
        if not 0 <= b <= axis < npr:
            raise ValueError(f"batch_dims ({batch_dims}) must be less than or equal to axis "
                             f"({axis}), which must be less than rank(params) ({npr})")
        if b == 0:
            return A.gather(params, indices, axis=axis)
        if axis != b:
            params = A.transpose(params, list(range(b)) + [axis] + list(range(b, axis)) +
                                 list(range(axis + 1, npr)))
        out = gather_nd(params, A.expand_dims(indices, -1), batch_dims=b)
        if axis == b:
            return out
        n_idx, n_mid = ni - b, axis - b  # out is B + I + params[b:axis] + params[axis+1:]
        front = list(range(b))
        idx = list(range(b, b + n_idx))
        mid = list(range(b + n_idx, b + n_idx + n_mid))
        return A.transpose(out, front + mid + idx + list(range(b + n_idx + n_mid, out.shape.ndims)))


# -- gradients (TF's rules) ----------------------------------------------------------------
def _shape_of(t):
    from .array_ops import shape
    return t.shape.as_list() if t.shape.is_fully_defined() else shape(t, out_type=dtypes.int32)


@RegisterGradient("GatherNd")
def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    from .math_ops import cast
    ref_shape = _shape_of(params)
    if not isinstance(ref_shape, list):
        ref_shape = cast(ref_shape, indices.dtype)
    return [scatter_nd(indices, grad, ref_shape), None]


@RegisterGradient("ScatterNd")
def _scatter_nd_grad(op, grad):
    return [None, gather_nd(grad, op.inputs[0]), None]


@RegisterGradient("TensorScatterUpdate")
def _tensor_scatter_update_grad(op, grad):
    from .array_ops import zeros_like
    indices, updates = op.inputs[1], op.inputs[2]
    return [tensor_scatter_update(grad, indices, zeros_like(updates)), None,
            gather_nd(grad, indices)]


@RegisterGradient("TensorScatterAdd")
def _tensor_scatter_add_grad(op, grad):
    return [grad, None, gather_nd(grad, op.inputs[1])]


@RegisterGradient("TensorScatterSub")
def _tensor_scatter_sub_grad(op, grad):
    return [grad, None, -gather_nd(grad, op.inputs[1])]
