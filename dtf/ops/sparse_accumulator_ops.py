"""tf.SparseConditionalAccumulator: a ConditionalAccumulator for IndexedSlices gradients,
so synchronous training of an embedding moves and sums only the rows each replica
touched. The handle, num_accumulated, set_global_step and dtf's wait_ready are the dense
accumulator's; apply and take have ops of their own (kernels:
dtf/kernels/cpu/sparse_accumulator.py).

As in TF, entries are summed by index with a merge that expects each gradient's indices
sorted, and MEAN divides each accumulated row by the number of gradients that carried it.
"""
from __future__ import annotations

import collections

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.indexed_slices import IndexedSlices
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .common import convert
from .data_flow_ops import ConditionalAccumulator, _int64

__all__ = ["SparseConditionalAccumulator"]

_SCALAR = TensorShape([])


@register_op("SparseConditionalAccumulator", stateful=True, ref_output=True)
def _handle_infer(inputs, attrs):
    return [(_dtypes.string, _SCALAR)]


@register_op("SparseAccumulatorApplyGradient", stateful=True, ref_inputs=(0,))
def _apply_infer(inputs, attrs):
    return []


@register_op("SparseAccumulatorTakeGradient", stateful=True, ref_inputs=(0,))
def _take_infer(inputs, attrs):
    shape = inputs[0].op.get_attr("shape")
    rank = None if shape is None else len(shape)
    values = unknown_shape() if rank is None or rank == 0 else TensorShape(
        [None] + list(shape[1:]))
    return [(_dtypes.int64, TensorShape([None])), (attrs["dtype"], values),
            (_dtypes.int64, TensorShape([None if not rank else rank]))]


for _op in ("SparseConditionalAccumulator", "SparseAccumulatorApplyGradient",
            "SparseAccumulatorTakeGradient"):
    NotDifferentiable(_op)

SparseAccumulatorTakeGradient = collections.namedtuple(
    "SparseAccumulatorTakeGradient", ["indices", "values", "shape"])


class SparseConditionalAccumulator(ConditionalAccumulator):
    """Aggregates sparse gradients (IndexedSlices): ``apply_indexed_slices_grad`` adds one
    unless it is stale, ``take_indexed_slices_grad`` blocks until enough have arrived and
    returns their per-row average (or sum) as IndexedSlices."""

    _HANDLE_OP = "SparseConditionalAccumulator"

    def __init__(self, dtype, shape=None, shared_name=None,
                 name="sparse_conditional_accumulator", reduction_type="MEAN"):
        super().__init__(dtype, shape=shape, shared_name=shared_name, name=name,
                         reduction_type=reduction_type)

    def apply_indexed_slices_grad(self, grad, local_step=0, name=None):
        """Adds the IndexedSlices ``grad`` computed at ``local_step``; dropped when stale."""
        if not isinstance(grad, IndexedSlices):
            raise TypeError(f"apply_indexed_slices_grad needs IndexedSlices, got {grad!r}")
        return self.apply_grad(grad.indices, grad.values, grad_shape=grad.dense_shape,
                               local_step=local_step, name=name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0, name=None):
        """Adds the gradient whose rows ``grad_values`` sit at ``grad_indices`` (of a dense
        tensor of ``grad_shape`` when given, checked against the accumulator's shape)."""
        step = _int64(local_step, "local_step")
        indices = _int64(grad_indices, "grad_indices")
        values = convert(grad_values, "grad_values", dtype=self._dtype)
        known = grad_shape is not None
        shape = _int64(grad_shape if known else [], "grad_shape")
        return _ops.make_op("SparseAccumulatorApplyGradient",
                            [self._accumulator_ref, step, indices, values, shape],
                            {"dtype": self._dtype, "has_known_shape": known},
                            name=name or "SparseAccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """Blocks until ``num_required`` gradients arrived; returns (indices, values, shape)
        of their aggregate."""
        n = convert(num_required, "num_required", dtype=_dtypes.int32)
        op = _ops.make_op("SparseAccumulatorTakeGradient", [self._accumulator_ref, n],
                          {"dtype": self._dtype}, name=name or "SparseAccumulatorTakeGradient")
        return SparseAccumulatorTakeGradient(*op.outputs)

    def take_indexed_slices_grad(self, num_required, name=None):
        """take_grad as IndexedSlices."""
        taken = self.take_grad(num_required, name=name)
        return IndexedSlices(indices=taken.indices, values=taken.values,
                             dense_shape=taken.shape)
