"""GPU kernels of the array, segment, sort, matrix, linear-algebra, special-function and
extra nn ops that have no CUDA kernel yet: like the scans and top_k (``state.HOST_RUN_OPS``),
they copy their inputs to the host and run the CPU kernel, so a graph built under
``tf.device('/gpu:0')`` runs them without soft placement; the next GPU kernel copies their
outputs back."""
from __future__ import annotations

from dtf.kernels.registry import register_kernel
from .state import _on_host

HOST_RUN_ARRAY_OPS = (
    "GatherNd", "ScatterNd", "TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub",
    "SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd", "UnsortedSegmentMax",
    "UnsortedSegmentMin", "UnsortedSegmentProd", "DynamicPartition", "DynamicStitch",
    "Unique", "UniqueWithCounts",
    "Diag", "DiagPart", "MatrixDiag", "MatrixDiagPart", "MatrixSetDiag", "MatrixBandPart",
    "LinSpace", "ReverseSequence", "Roll", "Cross",
    "MatrixInverse", "MatrixDeterminant", "LogMatrixDeterminant", "Cholesky", "MatrixSolve",
    "MatrixTriangularSolve", "Qr", "SelfAdjointEigV2", "Svd",
    "Lgamma", "Digamma", "Polygamma", "Erfc", "Rint", "Xlogy", "MulNoNan",
    "Selu", "SeluGrad", "LRN", "LRNGrad",
    "Bincount", "HistogramFixedWidth", "ListDiff", "UnravelIndex", "LowerBound", "UpperBound",
    "BroadcastArgs", "EnsureShape",
    "ComputeAccidentalHits", "ParallelDynamicStitch", "SparseReorder", "SparseToDense",
    "SparseReshape", "SparseAdd", "SparseAddGrad", "SparseTensorDenseAdd", "SparseConcat",
    "ResizeBilinear", "ResizeBilinearGrad", "ResizeNearestNeighbor", "ResizeNearestNeighborGrad",
)

for _op in HOST_RUN_ARRAY_OPS:
    register_kernel(_op, "GPU", label="host memory")(_on_host(_op))
