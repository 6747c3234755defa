"""tf.sparse: the SparseTensor basics dtf has (see dtf/ops/sparse_ops.py)."""
from dtf.ops.sparse_ops import SparseTensor, SparseTensorValue  # noqa: F401
from dtf.ops.sparse_ops import sparse_placeholder as placeholder  # noqa: F401
from dtf.ops.sparse_ops import sparse_tensor_to_dense as to_dense  # noqa: F401
from dtf.ops.sparse_ops import sparse_to_dense  # noqa: F401
