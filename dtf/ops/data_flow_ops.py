"""Queues and conditional accumulators (TF's data_flow_ops): the stateful ops that
synchronous training is built from.

A queue or an accumulator is a resource: its creating op (``FIFOQueueV2``,
``ConditionalAccumulator``) outputs a handle (``ref_output``), and every op that uses it
takes that handle as input 0 (``ref_inputs=(0,)``), so the graph colocates them with the
resource and the executor hands them the resource itself. Kernels, which block on a
condition while honouring the step's deadline and abort, live in
dtf/kernels/cpu/data_flow.py.
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from .common import convert, fmt_shape

__all__ = ["QueueBase", "FIFOQueue", "PaddingFIFOQueue", "RandomShuffleQueue", "PriorityQueue",
           "ConditionalAccumulator"]

_SCALAR = TensorShape([])


# -- op definitions ------------------------------------------------------------------
def _handle_infer(inputs, attrs):
    return [(_dtypes.string, _SCALAR)]


def _no_outputs(inputs, attrs):
    return []


# Handle ops whose elements start with components their attrs do not list: a priority
# queue's int64 priority (TF's attrs, which describe only the values).
_LEADING_SHAPES = {"PriorityQueueV2": [[]]}


def _queue_shapes(handle, n):
    """The static component shapes of the queue behind ``handle`` (unknown when unset)."""
    lead = _LEADING_SHAPES.get(handle.op.type, [])
    shapes = (lead + list(handle.op.get_attr("shapes") or [])) or [None] * n
    return [unknown_shape() if s is None else TensorShape(s) for s in shapes]


def _dequeue_infer(inputs, attrs):
    types = attrs["component_types"]
    return list(zip(types, _queue_shapes(inputs[0], len(types))))


def _dequeue_many_infer(inputs, attrs):
    n = inputs[1].op.get_attr("value") if inputs[1].op.type == "Const" else None
    lead = TensorShape([None if n is None else int(n)])
    return [(dt, lead.concatenate(s)) for dt, s in _dequeue_infer(inputs, attrs)]


def _take_infer(inputs, attrs):
    shape = inputs[0].op.get_attr("shape")
    return [(attrs["dtype"], unknown_shape() if shape is None else TensorShape(shape))]


def _int32_scalar(inputs, attrs):
    return [(_dtypes.int32, _SCALAR)]


_HANDLE_OPS = ("FIFOQueueV2", "ConditionalAccumulator", "RandomShuffleQueueV2",
               "PaddingFIFOQueueV2", "PriorityQueueV2")
# op type -> shape function; every one takes the resource handle as input 0.
_RESOURCE_OPS = {
    "QueueEnqueueV2": _no_outputs,
    "QueueEnqueueManyV2": _no_outputs,
    "QueueDequeueV2": _dequeue_infer,
    "QueueDequeueManyV2": _dequeue_many_infer,
    "QueueDequeueUpToV2": lambda inputs, attrs: [
        (dt, TensorShape([None]).concatenate(s)) for dt, s in _dequeue_infer(inputs, attrs)],
    "QueueSizeV2": _int32_scalar,
    "QueueCloseV2": _no_outputs,
    "AccumulatorApplyGradient": _no_outputs,
    "AccumulatorTakeGradient": _take_infer,
    "AccumulatorNumAccumulated": _int32_scalar,
    "AccumulatorSetGlobalStep": _no_outputs,
    # dtf's own: blocks until num_required gradients are there, takes nothing. A step that
    # takes from several accumulators waits on all of them first, so a deadline can only
    # expire before anything was taken.
    "_AccumulatorWaitReady": _no_outputs,
}
for _op in _HANDLE_OPS:
    register_op(_op, stateful=True, ref_output=True)(_handle_infer)
    NotDifferentiable(_op)
for _op, _infer in _RESOURCE_OPS.items():
    register_op(_op, stateful=True, ref_inputs=(0,))(_infer)
    NotDifferentiable(_op)


def _shape_attr(shape):
    dims = as_shape(shape).as_tuple_or_none()
    return None if dims is None else list(dims)


# -- queues --------------------------------------------------------------------------
class QueueBase:
    """Base class of queues: enqueue/dequeue of tuples of tensors through a queue handle."""

    def __init__(self, dtypes, shapes, names, queue_ref):
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name.split("/")[-1]

    dtypes = property(lambda self: self._dtypes)
    shapes = property(lambda self: self._shapes)
    names = property(lambda self: self._names)
    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._queue_ref.op.name)

    def _components(self, vals, batched):
        """``vals`` as one tensor per component, converted and checked against the shapes."""
        if not isinstance(vals, (list, tuple)):
            vals = [vals]
        if len(vals) != len(self._dtypes):
            raise ValueError(f"Expected {len(self._dtypes)} components for queue {self.name}, "
                             f"got {len(vals)}")
        out = []
        for i, (v, dt, shape) in enumerate(zip(vals, self._dtypes, self._shapes)):
            t = convert(v, f"component_{i}", dtype=dt)
            got = t.shape
            if batched:
                got = got.with_rank_at_least(1)
                got = unknown_shape() if got.ndims is None else TensorShape(got.as_tuple_or_none()[1:])
            got.assert_is_compatible_with(shape)
            out.append(t)
        return out

    def _op(self, op_type, inputs, attrs, name, default):
        with _ops.name_scope(name, f"{self._name}_{default}", [self._queue_ref]) as scope:
            return _ops.make_op(op_type, [self._queue_ref] + list(inputs), attrs, name=scope)

    def enqueue(self, vals, name=None):
        """Enqueues one element (a tensor or a tuple of tensors, one per component)."""
        comps = self._components(vals, batched=False)
        return self._op("QueueEnqueueV2", comps, {"Tcomponents": list(self._dtypes),
                                                  "timeout_ms": -1}, name, "enqueue")

    def enqueue_many(self, vals, name=None):
        """Enqueues the slices along dimension 0 of each component as separate elements."""
        comps = self._components(vals, batched=True)
        return self._op("QueueEnqueueManyV2", comps, {"Tcomponents": list(self._dtypes),
                                                      "timeout_ms": -1}, name, "EnqueueMany")

    def _outputs(self, op):
        outs = list(op.outputs)
        return outs[0] if len(outs) == 1 else outs

    def dequeue(self, name=None, timeout_ms=-1):
        """Dequeues one element; blocks until there is one. ``timeout_ms`` (dtf: TF has the
        attr but ignores it) bounds the wait with a DeadlineExceededError."""
        op = self._op("QueueDequeueV2", [], {"component_types": list(self._dtypes),
                                             "timeout_ms": int(timeout_ms)}, name, "Dequeue")
        return self._outputs(op)

    def dequeue_many(self, n, name=None):
        """Dequeues ``n`` elements, concatenated along a new dimension 0."""
        n = convert(n, "n", dtype=_dtypes.int32)
        op = self._op("QueueDequeueManyV2", [n], {"component_types": list(self._dtypes),
                                                  "timeout_ms": -1}, name, "DequeueMany")
        return self._outputs(op)

    def dequeue_up_to(self, n, name=None):
        """Like dequeue_many, but once the queue is closed returns what is left (fewer
        than ``n``, at least one) instead of failing."""
        n = convert(n, "n", dtype=_dtypes.int32)
        op = self._op("QueueDequeueUpToV2", [n], {"component_types": list(self._dtypes),
                                                  "timeout_ms": -1}, name, "DequeueUpTo")
        return self._outputs(op)

    def size(self, name=None):
        """The number of elements in the queue (an int32 scalar)."""
        return self._op("QueueSizeV2", [], {}, name, "Size").outputs[0]

    def close(self, cancel_pending_enqueues=False, name=None):
        """Closes the queue: later enqueues fail (CancelledError), dequeues fail
        (OutOfRangeError) once fewer elements remain than requested."""
        return self._op("QueueCloseV2", [], {"cancel_pending_enqueues": bool(cancel_pending_enqueues)},
                        name, "Close")


def _queue_attrs(dtypes, shapes, capacity, shared_name, padded=False):
    """(dtypes, shapes, attrs) of a queue's handle op, shapes checked as TF does (a
    padding queue's may leave dimensions unknown, not ranks)."""
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    dtypes = [_dtypes.as_dtype(d) for d in dtypes]
    if shapes is None:
        shapes = [unknown_shape()] * len(dtypes)
    else:
        # TF's rule: one shape given as a list of dims (``shapes=()`` for scalars).
        if isinstance(shapes, TensorShape) or all(s is None or isinstance(s, int)
                                                  for s in shapes):
            shapes = [shapes]
        shapes = [as_shape(s) for s in shapes]
        if len(shapes) != len(dtypes):
            raise ValueError("Queue shapes must have the same length as dtypes")
        for s in shapes:
            if not (s.ndims is not None if padded else s.is_fully_defined()):
                raise ValueError(f"Queue shapes must be {'of known rank' if padded else 'fully defined'}"
                                 f": {fmt_shape(s)}")
    attrs = {"component_types": dtypes,
             "shapes": [] if all(s.ndims is None for s in shapes) else [_shape_attr(s) for s in shapes],
             "capacity": int(capacity), "container": "", "shared_name": shared_name or ""}
    return dtypes, shapes, attrs


class RandomShuffleQueue(QueueBase):
    """A queue that dequeues elements in a random order, keeping ``min_after_dequeue``
    elements back until it is closed."""

    def __init__(self, capacity, min_after_dequeue, dtypes, shapes=None, names=None, seed=None,
                 shared_name=None, name="random_shuffle_queue"):
        from .random_ops import get_seed

        if names is not None:
            raise NotImplementedError("RandomShuffleQueue(names=...) is not supported")
        dtypes, shapes, attrs = _queue_attrs(dtypes, shapes, capacity, shared_name)
        seed1, seed2 = get_seed(seed)
        attrs.update(min_after_dequeue=int(min_after_dequeue), seed=seed1 or 0, seed2=seed2 or 0)
        ref = _ops.make_tensor("RandomShuffleQueueV2", [], attrs, name=name)
        super().__init__(dtypes, shapes, None, ref)


class PaddingFIFOQueue(QueueBase):
    """A FIFOQueue whose ``shapes`` may have None dimensions: ``dequeue_many`` pads each
    component to the largest in the batch."""

    def __init__(self, capacity, dtypes, shapes, names=None, shared_name=None,
                 name="padding_fifo_queue"):
        if names is not None:
            raise NotImplementedError("PaddingFIFOQueue(names=...) is not supported")
        if shapes is None:
            raise ValueError("PaddingFIFOQueue needs shapes (of known rank)")
        dtypes, shapes, attrs = _queue_attrs(dtypes, shapes, capacity, shared_name, padded=True)
        ref = _ops.make_tensor("PaddingFIFOQueueV2", [], attrs, name=name)
        super().__init__(dtypes, shapes, None, ref)


class FIFOQueue(QueueBase):
    """A queue that dequeues elements in first-in first-out order."""

    def __init__(self, capacity, dtypes, shapes=None, names=None, shared_name=None,
                 name="fifo_queue"):
        if names is not None:
            raise NotImplementedError("FIFOQueue(names=...) is not supported")
        dtypes, shapes, attrs = _queue_attrs(dtypes, shapes, capacity, shared_name)
        ref = _ops.make_tensor("FIFOQueueV2", [], attrs, name=name)
        super().__init__(dtypes, shapes, None, ref)


class PriorityQueue(QueueBase):
    """A queue that dequeues its lowest-priority element first. Every element starts with
    an int64 scalar priority that ``types`` and ``shapes`` do not list; dequeue returns it
    as the first component."""

    def __init__(self, capacity, types, shapes, names=None, shared_name=None,
                 name="priority_queue"):
        if names is not None:
            raise NotImplementedError("PriorityQueue(names=...) is not supported")
        if shapes is None:
            raise ValueError("PriorityQueue needs shapes (fully defined, one per type)")
        types, shapes, attrs = _queue_attrs(types, shapes, capacity, shared_name)
        ref = _ops.make_tensor("PriorityQueueV2", [], attrs, name=name)
        super().__init__([_dtypes.int64] + types, [TensorShape([])] + shapes, None, ref)


# -- conditional accumulator ---------------------------------------------------------
class ConditionalAccumulator:
    """Aggregates gradients: ``apply_grad`` adds one unless it is stale (its local_step
    is behind the accumulator's global step), ``take_grad`` blocks until enough have
    arrived, returns their average and starts the next step."""

    _HANDLE_OP = "ConditionalAccumulator"  # SparseConditionalAccumulator's differs

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator",
                 reduction_type="MEAN"):
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"reduction_type must be MEAN or SUM, got {reduction_type!r}")
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = unknown_shape() if shape is None else as_shape(shape)
        attrs = {"dtype": self._dtype, "shape": _shape_attr(self._shape), "container": "",
                 "shared_name": shared_name or "", "reduction_type": reduction_type}
        self._accumulator_ref = _ops.make_tensor(self._HANDLE_OP, [], attrs, name=name)
        self._name = self._accumulator_ref.op.name.split("/")[-1]

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._accumulator_ref.op.name)
    dtype = property(lambda self: self._dtype)

    def num_accumulated(self, name=None):
        """How many gradients have been accumulated since the last take."""
        return _ops.make_tensor("AccumulatorNumAccumulated", [self._accumulator_ref], {},
                                name=name or f"{self._name}_NumAccumulated")

    def set_global_step(self, new_global_step, name=None):
        """Sets the accumulator's global step (gradients older than it are dropped)."""
        step = _int64(new_global_step, "new_global_step")
        return _ops.make_op("AccumulatorSetGlobalStep", [self._accumulator_ref, step], {},
                            name=name or "AccumulatorSetGlobalStep")

    def apply_grad(self, grad, local_step=0, name=None):
        """Adds ``grad`` computed at ``local_step``; dropped when stale."""
        grad = convert(grad, "grad", dtype=self._dtype)
        if not grad.shape.is_compatible_with(self._shape):
            raise ValueError(f"Shapes {grad.shape} and {self._shape} are incompatible for "
                             f"'AccumulatorApplyGradient' of accumulator {self.name}")
        step = _int64(local_step, "local_step")
        return _ops.make_op("AccumulatorApplyGradient", [self._accumulator_ref, step, grad],
                            {"dtype": self._dtype}, name=name or "AccumulatorApplyGradient")

    def take_grad(self, num_required, name=None):
        """Blocks until ``num_required`` gradients arrived; returns their average."""
        n = convert(num_required, "num_required", dtype=_dtypes.int32)
        return _ops.make_tensor("AccumulatorTakeGradient", [self._accumulator_ref, n],
                                {"dtype": self._dtype}, name=name or "AccumulatorTakeGradient")

    def wait_ready(self, num_required, name=None):
        """An op that blocks until ``num_required`` gradients arrived, taking nothing."""
        n = convert(num_required, "num_required", dtype=_dtypes.int32)
        return _ops.make_op("_AccumulatorWaitReady", [self._accumulator_ref, n], {},
                            name=name or "AccumulatorWaitReady")


def _int64(x, name):
    from .math_ops import cast

    return cast(convert(x, name, hint=_dtypes.int64), _dtypes.int64)
