"""tf.TensorArray over a dense buffer (see dtf/kernels/reference/tensor_array.py).

A TensorArray is a Python object around one tensor, its ``flow``: the buffer whose row i
is element i. ``write`` and ``scatter`` return a new TensorArray over a new buffer (TF's
TensorArray is used the same way: the written array is the one to keep), so arrays pass
through ``tf.while_loop`` and ``tf.cond`` as ordinary loop variables and differentiate with
ordinary gradient functions. Elements share one shape (``concat`` needs no lengths).
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape


def _static_int(t):
    v = getattr(t.op, "attrs", {}).get("value") if t.op.type == "Const" else None
    return None if v is None else int(v)


@register_op("TensorArrayNew")
def _new_infer(inputs, attrs):
    shape = attrs.get("element_shape")
    known = shape is not None and all(d is not None for d in shape)
    return [(attrs["dtype"], [_static_int(inputs[0])] + list(shape) if known else None)]


def _buffer_after_write(buf, value_shape, dynamic):
    """The static shape of a buffer after a write of elements shaped ``value_shape``."""
    n = buf.shape[0].value if buf.shape.ndims else None
    return [None if dynamic or n is None else n] + (value_shape.as_list()
                                                   if value_shape.ndims is not None else [])


@register_op("TensorArrayWrite")
def _write_infer(inputs, attrs):
    buf, _, value = inputs
    if value.shape.ndims is None:
        return [(buf.dtype, None)]
    return [(buf.dtype, _buffer_after_write(buf, value.shape, attrs["dynamic_size"]))]


@register_op("TensorArrayScatter")
def _scatter_infer(inputs, attrs):
    buf, _, value = inputs
    if value.shape.ndims is None:
        return [(buf.dtype, None)]
    return [(buf.dtype, _buffer_after_write(buf, value.shape[1:], attrs["dynamic_size"]))]


@register_op("TensorArrayRead")
def _read_infer(inputs, attrs):
    buf = inputs[0]
    shape = attrs.get("element_shape")
    return [(buf.dtype, shape)]


@register_op("TensorArrayWriteGrad")
def _write_grad_infer(inputs, attrs):
    grad, buf, _ = inputs
    return [(grad.dtype, buf.shape.as_list() if buf.shape.ndims is not None else None),
            (grad.dtype, attrs.get("element_shape"))]


@register_op("TensorArrayScatterGrad")
def _scatter_grad_infer(inputs, attrs):
    grad, buf, _ = inputs
    return [(grad.dtype, buf.shape.as_list() if buf.shape.ndims is not None else None),
            (grad.dtype, None)]


@register_op("TensorArrayReadGrad")
def _read_grad_infer(inputs, attrs):
    grad, buf, _ = inputs
    return [(grad.dtype, buf.shape.as_list() if buf.shape.ndims is not None else None)]


for _op in ("TensorArrayNew", "TensorArrayWriteGrad", "TensorArrayScatterGrad",
            "TensorArrayReadGrad"):
    NotDifferentiable(_op)


@RegisterGradient("TensorArrayWrite")
def _write_grad(op, grad):
    buf, index, value = op.inputs
    d_buf, d_value = _ops.make_op("TensorArrayWriteGrad", [grad, buf, index],
                                  {"element_shape": _shape_attr(value.shape)}).outputs
    return [d_buf, None, d_value]


@RegisterGradient("TensorArrayScatter")
def _scatter_grad(op, grad):
    buf, indices, _ = op.inputs
    d_buf, d_value = _ops.make_op("TensorArrayScatterGrad", [grad, buf, indices], {}).outputs
    return [d_buf, None, d_value]


@RegisterGradient("TensorArrayRead")
def _read_grad(op, grad):
    buf, index = op.inputs
    return [_ops.make_op("TensorArrayReadGrad", [grad, buf, index], {}).outputs[0], None]


def _shape_attr(shape):
    shape = as_shape(shape)
    return None if shape.ndims is None else shape.as_list()


class TensorArray:
    """A list of same-shaped tensors a loop can write one at a time (TF1's TensorArray)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if handle is not None:
            raise NotImplementedError("TensorArray(handle=...): dtf's TensorArrays have no "
                                      "handle; pass flow= to wrap an existing buffer")
        self._dtype = _dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._clear_after_read = True if clear_after_read is None else clear_after_read
        self._element_shape = as_shape(element_shape) if element_shape is not None else TensorShape(None)
        if flow is not None:
            if size is not None:
                raise ValueError("Cannot provide both a flow and size at the same time")
            self._flow = _ops.convert_to_tensor(flow)
            return
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        with _ops.name_scope(name, "TensorArray", [size]) as scope:
            size = _ops.convert_to_tensor(size, dtype=_dtypes.int32)
            self._flow = _ops.make_op("TensorArrayNew", [size], {
                "dtype": self._dtype, "element_shape": _shape_attr(self._element_shape),
                "dynamic_size": self._dynamic_size,
            }, name=scope or tensor_array_name).outputs[0]

    # -- properties ----------------------------------------------------------------------
    @property
    def flow(self):
        return self._flow

    @property
    def handle(self):
        return self._flow

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    def element_shape(self):
        return self._element_shape

    def _like(self, flow, element_shape=None):
        ta = TensorArray(self._dtype, dynamic_size=self._dynamic_size, flow=flow,
                         clear_after_read=self._clear_after_read, infer_shape=self._infer_shape,
                         element_shape=None)
        ta._element_shape = self._element_shape if element_shape is None else element_shape
        return ta

    def _merged_shape(self, shape):
        if not self._infer_shape:
            return self._element_shape
        shape = as_shape(shape)
        if self._element_shape.ndims is None:
            return shape
        if not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected "
                             f"{self._element_shape} (and infer_shape=True)")
        return self._element_shape.merge_with(shape)

    # -- element access -------------------------------------------------------------------
    def read(self, index, name=None):
        """Element ``index``."""
        index = _ops.convert_to_tensor(index, dtype=_dtypes.int32)
        return _ops.make_op("TensorArrayRead", [self._flow, index],
                            {"element_shape": _shape_attr(self._element_shape)},
                            name=name or "TensorArrayRead").outputs[0]

    def write(self, index, value, name=None):
        """A TensorArray with element ``index`` set to ``value``."""
        value = _ops.convert_to_tensor(value, dtype=self._dtype)
        index = _ops.convert_to_tensor(index, dtype=_dtypes.int32)
        shape = self._merged_shape(value.shape)
        flow = _ops.make_op("TensorArrayWrite", [self._flow, index, value],
                            {"dynamic_size": self._dynamic_size},
                            name=name or "TensorArrayWrite").outputs[0]
        return self._like(flow, shape)

    def stack(self, name=None):
        """All elements stacked along a new first dimension."""
        from .array_ops import identity

        out = identity(self._flow, name=name or "TensorArrayStack")
        if self._element_shape.ndims is not None and out.shape.ndims is None:
            out.set_shape(TensorShape([None]).concatenate(self._element_shape))
        return out

    def gather(self, indices, name=None):
        """The elements at ``indices``, stacked."""
        from .slicing_ops import gather

        return gather(self._flow, indices, name=name or "TensorArrayGather")

    def concat(self, name=None):
        """The elements concatenated along their first dimension (all the same shape here)."""
        from .array_ops import concat, reshape, shape

        with _ops.name_scope(name, "TensorArrayConcat", [self._flow]):
            dims = shape(self._flow)
            return reshape(self._flow, concat([[-1], dims[2:]], 0))

    def unstack(self, value, name=None):
        """A TensorArray whose elements are the rows of ``value``."""
        from .array_ops import identity

        value = _ops.convert_to_tensor(value, dtype=self._dtype)
        shape = self._merged_shape(value.shape[1:]) if value.shape.ndims else self._element_shape
        return self._like(identity(value, name=name or "TensorArrayUnstack"), shape)

    def scatter(self, indices, value, name=None):
        """A TensorArray with the elements at ``indices`` set to the rows of ``value``."""
        value = _ops.convert_to_tensor(value, dtype=self._dtype)
        indices = _ops.convert_to_tensor(indices, dtype=_dtypes.int32)
        shape = self._merged_shape(value.shape[1:]) if value.shape.ndims else self._element_shape
        flow = _ops.make_op("TensorArrayScatter", [self._flow, indices, value],
                            {"dynamic_size": self._dynamic_size},
                            name=name or "TensorArrayScatter").outputs[0]
        return self._like(flow, shape)

    def size(self, name=None):
        """The number of elements (int32)."""
        from .array_ops import shape

        return shape(self._flow, name=name or "TensorArraySize")[0]

    def identity(self):
        from .array_ops import identity

        return self._like(identity(self._flow))

    def close(self, name=None):
        from .control_flow_ops import no_op

        return no_op(name=name or "TensorArrayClose")

__all__ = ["TensorArray"]  # what ``import dtf`` exports from this family
