"""tf.linalg: TF 1.x's linear-algebra namespace, the same functions as at the top level
under their tf.linalg names (inv is matrix_inverse, det is matrix_determinant, band_part is
matrix_band_part, ...)."""
from dtf.ops.linalg_ops import matmul  # noqa: F401
from dtf.ops.linalg_solve_ops import (  # noqa: F401
    cholesky, cross, logdet, matrix_transpose, norm,
)
from dtf.ops.linalg_solve_ops import log_matrix_determinant as slogdet  # noqa: F401
from dtf.ops.linalg_solve_ops import matrix_determinant as det  # noqa: F401
from dtf.ops.linalg_solve_ops import matrix_inverse as inv  # noqa: F401
from dtf.ops.linalg_solve_ops import matrix_solve as solve  # noqa: F401
from dtf.ops.linalg_solve_ops import matrix_transpose as transpose  # noqa: F401
from dtf.ops.linalg_solve_ops import matrix_transpose as adjoint  # noqa: F401  (real dtypes)
from dtf.ops.linalg_solve_ops import matrix_triangular_solve as triangular_solve  # noqa: F401
from dtf.ops.linalg_composite_ops import cholesky_solve, lstsq, matrix_rank, matvec, pinv  # noqa: F401
from dtf.ops.linalg_decomp_ops import qr, svd  # noqa: F401
from dtf.ops.linalg_decomp_ops import self_adjoint_eig as eigh  # noqa: F401
from dtf.ops.linalg_decomp_ops import self_adjoint_eigvals as eigvalsh  # noqa: F401
from dtf.ops.matrix_ops import eye, trace  # noqa: F401
from dtf.ops.matrix_ops import matrix_band_part as band_part  # noqa: F401
from dtf.ops.matrix_ops import matrix_diag as diag  # noqa: F401
from dtf.ops.matrix_ops import matrix_diag_part as diag_part  # noqa: F401
from dtf.ops.matrix_ops import matrix_set_diag as set_diag  # noqa: F401
from dtf.ops.matrix_ops import diag as tensor_diag  # noqa: F401
from dtf.ops.matrix_ops import diag_part as tensor_diag_part  # noqa: F401
from dtf.ops.nn_ops import l2_normalize  # noqa: F401
from dtf.ops.tensordot_ops import einsum, tensordot  # noqa: F401
from dtf.ops.clip_ops import global_norm  # noqa: F401
