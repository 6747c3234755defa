"""Array ops: placeholders, identity, shape manipulation, slicing, gathering."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from .common import convert, same_as_input


@register_op("Placeholder")
def _placeholder_infer(inputs, attrs):
    shape = attrs.get("shape")
    return [(attrs["dtype"], unknown_shape() if shape is None else TensorShape(shape))]


def placeholder(dtype, shape=None, name=None):
    """A tensor that must be fed in ``Session.run``'s feed_dict."""
    dtype = dtypes.as_dtype(dtype)
    shape = None if shape is None else as_shape(shape).as_tuple_or_none()
    return _ops.make_tensor("Placeholder", [], {"dtype": dtype, "shape": None if shape is None else list(shape)},
                            name=name or "Placeholder")


@register_op("PlaceholderWithDefault")
def _placeholder_with_default_infer(inputs, attrs):
    return [(inputs[0].dtype, TensorShape(attrs["shape"]) if attrs.get("shape") is not None
             else unknown_shape())]


def placeholder_with_default(input, shape, name=None):  # noqa: A002 - TF's signature
    """Passes ``input`` through unless a value is fed."""
    input = convert(input, "input")
    shape = as_shape(shape)
    if not shape.is_compatible_with(input.shape):
        raise ValueError(f"Shapes {input.shape} and {shape} are incompatible")
    dims = shape.as_tuple_or_none()
    return _ops.make_tensor("PlaceholderWithDefault", [input],
                            {"dtype": input.dtype, "shape": None if dims is None else list(dims)},
                            name=name or "PlaceholderWithDefault")


register_op("Identity")(same_as_input)


def identity(input, name=None):  # noqa: A002
    """Returns a tensor with the same value as ``input``."""
    if hasattr(input, "_as_graph_element") and not isinstance(input, _ops.Tensor) and hasattr(input, "value"):
        input = input.value()
    input = convert(input, "input")
    return _ops.make_tensor("Identity", [input], {"T": input.dtype}, name=name or "Identity")
