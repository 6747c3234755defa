"""_Send/_Recv: the pair the partitioner puts on every edge that crosses devices.

They exist only in partitions (never built by users), so their shape inference is trivial.
They are defined here, beside the op registry, because the partitioner (below the runtime)
inserts them and the worker's executor runs them: neither should import an op family.
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
