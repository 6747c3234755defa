"""tf.make_tensor_proto / tf.make_ndarray: numpy values to and from TF's TensorProto."""
from __future__ import annotations

__all__ = ["make_ndarray", "make_tensor_proto"]


def make_tensor_proto(values, dtype=None, shape=None, verify_shape=False, allow_broadcast=False):
    """A TensorProto of ``values`` (converted as tf.constant converts them: dtype checks,
    a scalar filling ``shape``, fewer values padded with the last)."""
    from dtf.ops.constant_op import make_ndarray as as_const_array
    from . import graph_io, graph_pb

    if isinstance(values, graph_pb.TensorProto):
        return values
    if allow_broadcast:
        raise NotImplementedError("make_tensor_proto: allow_broadcast is not supported by dtf")
    return graph_io.make_tensor_proto(as_const_array(values, dtype, shape, verify_shape))


def make_ndarray(tensor):
    """The numpy value of a TensorProto (dtf's, or any with SerializeToString, e.g. TF's)."""
    from . import graph_io, graph_pb

    if not isinstance(tensor, graph_pb.TensorProto):
        if not hasattr(tensor, "SerializeToString"):
            raise TypeError(f"make_ndarray expects a TensorProto, got {type(tensor).__name__}")
        tensor = graph_pb.TensorProto.FromString(tensor.SerializeToString())
    return graph_io.make_ndarray(tensor)
