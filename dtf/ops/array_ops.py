"""Array ops: placeholders, identity, shape manipulation, slicing, gathering."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from .common import convert, same_as_input

__all__ = ["placeholder", "placeholder_with_default", "identity", "shape", "reshape", "fill",
           "zeros", "ones", "zeros_like", "ones_like", "broadcast_to"]


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


# -- shape ops used by every gradient ------------------------------------------------------
@register_op("Shape")
def _shape_infer(inputs, attrs):
    nd = inputs[0].shape.ndims
    return [(attrs.get("out_type", dtypes.int32), TensorShape([nd]))]


def shape(input, name=None, out_type=dtypes.int32):  # noqa: A002
    """The shape of ``input`` as a 1-D int tensor."""
    input = convert(input, "input")
    return _ops.make_tensor("Shape", [input], {"T": input.dtype, "out_type": dtypes.as_dtype(out_type)},
                            name=name or "Shape")


@register_op("Reshape")
def _reshape_infer(inputs, attrs):
    from .common import shape_from_tensor

    x, s = inputs
    target = shape_from_tensor(s)
    if target.ndims is None:
        return [(x.dtype, target)]
    dims = list(target.as_tuple_or_none())
    known_in = x.shape.num_elements()
    # A -1 in a constant shape shows up as None here; resolve it when the input is known.
    from .common import const_value

    cv = const_value(s)
    if cv is not None:
        cv = [int(d) for d in cv.reshape(-1)]
        if cv.count(-1) > 1:
            raise ValueError(f"Cannot reshape a tensor with more than one -1 dimension: {cv}")
        if known_in is not None:
            known = 1
            for d in cv:
                if d != -1:
                    known *= d
            if -1 in cv:
                if known == 0 or known_in % known:
                    raise ValueError(f"Cannot reshape a tensor with {known_in} elements to shape "
                                     f"{cv} (the other dimensions do not divide it)")
                dims[cv.index(-1)] = known_in // known
            elif known != known_in:
                raise ValueError(f"Cannot reshape a tensor with {known_in} elements to shape "
                                 f"{cv} ({known} elements) for '{attrs.get('_op_name', 'Reshape')}' "
                                 f"with input shapes: {x.shape}, [{len(cv)}]")
    return [(x.dtype, TensorShape(dims))]


def reshape(tensor, shape, name=None):
    """Reshapes ``tensor``; one dimension of ``shape`` may be -1."""
    tensor = convert(tensor, "tensor")
    shape = convert(shape, "shape", hint=dtypes.int32)
    return _ops.make_tensor("Reshape", [tensor, shape], {"T": tensor.dtype, "Tshape": shape.dtype},
                            name=name or "Reshape")


@register_op("BroadcastGradientArgs")
def _bga_infer(inputs, attrs):
    return [(inputs[0].dtype, TensorShape([None])), (inputs[0].dtype, TensorShape([None]))]


def broadcast_gradient_args(s0, s1, name=None):
    """Reduction axes for the gradients of a broadcasting binary op."""
    op = _ops.make_op("BroadcastGradientArgs", [s0, s1], {"T": s0.dtype},
                      name=name or "BroadcastGradientArgs")
    return op.outputs[0], op.outputs[1]


@register_op("Fill")
def _fill_infer(inputs, attrs):
    from .common import shape_from_tensor

    return [(inputs[1].dtype, shape_from_tensor(inputs[0]))]


def fill(dims, value, name=None):
    """A tensor of shape ``dims`` filled with ``value``."""
    dims = convert(dims, "dims", hint=dtypes.int32)
    value = convert(value, "value")
    return _ops.make_tensor("Fill", [dims, value], {"T": value.dtype, "index_type": dims.dtype},
                            name=name or "Fill")


@register_op("ZerosLike")
def _zeros_like_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


@register_op("OnesLike")
def _ones_like_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


def zeros_like(tensor, dtype=None, name=None, optimize=True):
    """A tensor of zeros with the shape (and, unless given, dtype) of ``tensor``."""
    with _ops.name_scope(name, "zeros_like", [tensor]) as scope:
        tensor = convert(tensor, "tensor")
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype:
            return zeros(shape(tensor), dtype=dtype, name=scope)
        if optimize and tensor.shape.is_fully_defined():
            from .constant_op import constant

            return constant(0, dtype=tensor.dtype, shape=tensor.shape.as_list(), name=scope)
        return _ops.make_tensor("ZerosLike", [tensor], {"T": tensor.dtype}, name=scope)


def ones_like(tensor, dtype=None, name=None, optimize=True):
    """A tensor of ones with the shape (and, unless given, dtype) of ``tensor``."""
    with _ops.name_scope(name, "ones_like", [tensor]) as scope:
        tensor = convert(tensor, "tensor")
        if dtype is not None and dtypes.as_dtype(dtype) != tensor.dtype:
            return ones(shape(tensor), dtype=dtype, name=scope)
        if optimize and tensor.shape.is_fully_defined():
            from .constant_op import constant

            return constant(1, dtype=tensor.dtype, shape=tensor.shape.as_list(), name=scope)
        return _ops.make_tensor("OnesLike", [tensor], {"T": tensor.dtype}, name=scope)


def _filled(value, shape_, dtype, name, default_name):
    from .constant_op import constant

    dtype = dtypes.as_dtype(dtype)
    with _ops.name_scope(name, default_name, []) as scope:
        if isinstance(shape_, _ops.Tensor):
            return fill(shape_, constant(value, dtype=dtype), name=scope)
        dims = as_shape(shape_)
        if dims.is_fully_defined():
            return constant(value, dtype=dtype, shape=dims.as_list(), name=scope)
        return fill(convert(shape_, hint=dtypes.int32), constant(value, dtype=dtype), name=scope)


def zeros(shape, dtype=dtypes.float32, name=None):  # noqa: A002 - TF's signature
    return _filled(0, shape, dtype, name, "zeros")


def ones(shape, dtype=dtypes.float32, name=None):
    return _filled(1, shape, dtype, name, "ones")


@register_op("BroadcastTo")
def _broadcast_to_infer(inputs, attrs):
    from .common import shape_from_tensor

    return [(inputs[0].dtype, shape_from_tensor(inputs[1]))]


def broadcast_to(input, shape, name=None):  # noqa: A002
    """Broadcasts ``input`` to ``shape`` (numpy rules)."""
    input = convert(input, "input")
    shape = convert(shape, "shape", hint=dtypes.int32)
    return _ops.make_tensor("BroadcastTo", [input, shape], {"T": input.dtype, "Tidx": shape.dtype},
                            name=name or "BroadcastTo")
