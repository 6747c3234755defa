"""_Send/_Recv: the pair the partitioner puts on every edge that crosses devices.

They exist only in partitions (never built by users), so their shape inference is trivial.
"""
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import unknown_shape


@register_op("_Send", stateful=True)
def _send_infer(inputs, attrs):
    return []


@register_op("_Recv", stateful=True)
def _recv_infer(inputs, attrs):
    return [(attrs["tensor_type"], unknown_shape())]


NotDifferentiable("_Send")
NotDifferentiable("_Recv")
