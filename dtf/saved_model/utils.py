"""tf.saved_model.utils: TensorInfo to and from graph tensors."""
from __future__ import annotations

from dtf.framework import graph_pb as pb
from .proto import TensorInfo

__all__ = ["build_tensor_info", "get_tensor_from_tensor_info"]


def build_tensor_info(tensor):
    """The TensorInfo (name, dtype, shape; or the three names of a SparseTensor) of ``tensor``."""
    from dtf.ops.sparse_ops import SparseTensor

    if isinstance(tensor, SparseTensor):
        info = TensorInfo(coo_sparse=TensorInfo.CooSparse(
            values_tensor_name=tensor.values.name, indices_tensor_name=tensor.indices.name,
            dense_shape_tensor_name=tensor.dense_shape.name))
    else:
        info = TensorInfo(name=tensor.name)
    info.dtype = pb.datatype_enum(tensor.dtype.base_dtype if hasattr(tensor.dtype, "base_dtype")
                                  else tensor.dtype)
    shape = tensor.get_shape()
    if shape.ndims is None:
        info.tensor_shape.unknown_rank = True
    else:
        for d in shape.as_list():
            info.tensor_shape.dim.add(size=-1 if d is None else d)
    return info


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The Tensor (or SparseTensor) ``tensor_info`` names in ``graph``."""
    from dtf.framework import ops as _ops
    from dtf.ops.sparse_ops import SparseTensor

    graph = graph or _ops.get_default_graph()

    def get(name):
        if import_scope:
            name = f"{import_scope}/{name}"
        return graph.as_graph_element(name)

    kind = tensor_info.WhichOneof("encoding")
    if kind == "name":
        return get(tensor_info.name)
    if kind == "coo_sparse":
        c = tensor_info.coo_sparse
        return SparseTensor(get(c.indices_tensor_name), get(c.values_tensor_name),
                            get(c.dense_shape_tensor_name))
    raise ValueError(f"Invalid TensorInfo.encoding: {kind}")
