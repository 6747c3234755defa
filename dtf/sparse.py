"""tf.sparse: the SparseTensor basics dtf has (dtf/ops/sparse_ops.py, sparse_math_ops.py,
sparse_combine_ops.py)."""
from dtf.ops.sparse_combine_ops import sparse_add as add  # noqa: F401
from dtf.ops.sparse_combine_ops import sparse_concat as concat  # noqa: F401
from dtf.ops.sparse_combine_ops import sparse_reshape as reshape  # noqa: F401
from dtf.ops.sparse_math_ops import sparse_reduce_sum as reduce_sum  # noqa: F401
from dtf.ops.sparse_math_ops import sparse_reorder as reorder  # noqa: F401
from dtf.ops.sparse_math_ops import sparse_retain as retain  # noqa: F401
from dtf.ops.sparse_math_ops import sparse_tensor_dense_matmul as matmul  # noqa: F401
from dtf.ops.sparse_math_ops import sparse_tensor_dense_matmul as sparse_dense_matmul  # noqa: F401
from dtf.ops.sparse_ops import SparseTensor  # noqa: F401
from dtf.ops.sparse_ops import sparse_placeholder as placeholder  # noqa: F401
from dtf.ops.sparse_ops import sparse_tensor_to_dense as to_dense  # noqa: F401
