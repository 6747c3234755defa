"""tf.gradients: reverse-mode differentiation that adds gradient ops to the graph.

Gradient functions come from the op registry (``RegisterGradient``); this module only
walks the graph. Unconnected inputs get None; gradients reaching a tensor along several
paths are summed (AddN), or concatenated when all are IndexedSlices, as in TF.
"""
from __future__ import annotations

import collections

import numpy as np

from dtf.framework import ops as _ops
from dtf.framework.op_registry import get_gradient_function

_BACKPROP_DTYPES = {"float16", "float32", "float64"}


def _is_backprop(t) -> bool:
    return t.dtype.name in _BACKPROP_DTYPES or t.op.op_def.ref_output


def _as_tensor_list(x, name):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return [_to_tensor(v, as_ref=(name == "x")) for v in x]
    return [_to_tensor(x, as_ref=(name == "x"))]


def _to_tensor(v, as_ref):
    if hasattr(v, "_ref") and as_ref and not isinstance(v, _ops.Tensor):
        return v._ref()
    return _ops.convert_to_tensor(v)


def gradients(ys, xs, grad_ys=None, name="gradients", colocate_gradients_with_ops=False,
              gate_gradients=False, aggregation_method=None, stop_gradients=None,
              unconnected_gradients="none"):
    """Symbolic partial derivatives of sum(ys) with respect to each x in xs."""
    ys = _as_tensor_list(ys, "y")
    xs = _as_tensor_list(xs, "x")
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    stop_ops = {t.op for t in _as_tensor_list(stop_gradients, "stop")}
    graph = ys[0].graph if ys else _ops.get_default_graph()

    with _ops.name_scope(name, "gradients", ys + xs) as scope:
        grad_scope = scope[:-1] if scope.endswith("/") else scope
        # Ops on a path from some x to some y.
        forward = _reachable_from({x.op for x in xs})
        between = _reaching({y.op for y in ys}, forward)
        between |= {y.op for y in ys if y.op in forward}

        grads: dict = {}  # tensor -> list of incoming gradient tensors
        for y, gy in zip(ys, grad_ys):
            if gy is None:
                if y.dtype.is_integer or y.dtype.is_bool:
                    raise TypeError(f"Gradient of {y.name} with dtype {y.dtype.name} requires grad_ys")
                from .array_ops import ones_like

                with _ops.name_scope(None, "grad_ys"):
                    gy = ones_like(y, name=f"grad_ys_{len(grads)}")
            else:
                gy = _ops.convert_to_tensor(gy, dtype=y.dtype)
            grads.setdefault(y, []).append(gy)

        # Pending counts: an op is processed once every consumer inside `between` is done.
        pending = {}
        for op in between:
            for t in op.inputs:
                if t.op in between:
                    pending[t.op] = pending.get(t.op, 0) + 1
        # First in, first out from the ys in order, as TF walks: the order in which the
        # gradients reaching a tensor are listed (so concatenated IndexedSlices) is TF's.
        ready = collections.deque(dict.fromkeys(
            y.op for y in ys if y.op in between and pending.get(y.op, 0) == 0))
        seen = set()
        while ready:
            op = ready.popleft()
            if op in seen:
                continue
            seen.add(op)
            out_grads = []
            has_grad = False
            for t in op.outputs:
                g = _aggregate(grads.get(t), t)
                if g is not None:
                    grads[t] = [g]
                    has_grad = True
                out_grads.append(g)
            # Only inputs that lead back to some x need a gradient.
            if has_grad and op not in stop_ops and any(t.op in between for t in op.inputs):
                in_grads = _call_grad_fn(op, out_grads, grad_scope, graph)
                if in_grads is not None:
                    for t, g in zip(op.inputs, in_grads):
                        if g is None or not _is_backprop(t):
                            continue
                        if isinstance(g, _ops.Tensor) and t.dtype != g.dtype and not t.op.op_def.ref_output:
                            from .math_ops import cast

                            g = cast(g, t.dtype)
                        grads.setdefault(t, []).append(g)
            for t in op.inputs:
                src = t.op
                if src in between:
                    pending[src] -= 1
                    if pending[src] == 0:
                        ready.append(src)

        result = []
        for x in xs:
            g = _aggregate(grads.get(x), x)
            if g is None and unconnected_gradients == "zero":
                from .array_ops import zeros_like

                g = zeros_like(x)
            result.append(g)
    return result


def _aggregate(gs, t):
    if not gs:
        return None
    gs = [g for g in gs if g is not None]
    if not gs:
        return None
    if len(gs) == 1:
        return gs[0]
    from dtf.framework.indexed_slices import IndexedSlices, concat_indexed_slices
    from .math_ops import add_n

    # Sparse gradients stay sparse (rows concatenated); mixed with a dense one they are
    # densified and summed, as TF's AggregateIndexedSlicesGradients does.
    if all(isinstance(g, IndexedSlices) for g in gs):
        return concat_indexed_slices(gs)
    return add_n([_ops.convert_to_tensor(g) for g in gs])


# Op types whose gradient functions take IndexedSlices as they come (passing them on or
# handling them); every other gradient function gets them densified.
TAKES_INDEXED_SLICES = {"Identity"}


def _call_grad_fn(op, out_grads, grad_scope, graph):
    # gradient_override_map applies to the ops created inside it (TF records it then).
    op_type = graph._gradient_type_by_op.get(op.name, op.type)
    try:
        fn = get_gradient_function(op_type)
    except LookupError:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})") from None
    if fn is None:
        return [None] * len(op.inputs)
    # Missing output gradients become zeros, as TF does for multi-output ops.
    filled = []
    sparse_ok = op_type in TAKES_INDEXED_SLICES
    for t, g in zip(op.outputs, out_grads):
        if g is None and _is_backprop(t):
            from .array_ops import zeros_like

            g = zeros_like(t)
        elif not sparse_ok and not isinstance(g, _ops.Tensor) and g is not None:
            # IndexedSlices reaching a gradient written for dense tensors: densified, as
            # TF's op constructors would convert them.
            g = _ops.convert_to_tensor(g)
        filled.append(g)
    with _ops.name_scope(None), _ops.name_scope(f"{grad_scope}/{op.name}_grad/"):
        in_grads = fn(op, *filled)
    if not isinstance(in_grads, (list, tuple)):
        in_grads = [in_grads]
    in_grads = list(in_grads)
    if len(in_grads) != len(op.inputs):
        raise ValueError(f"Num gradients {len(in_grads)} generated for op {op.name} do not match "
                         f"num inputs {len(op.inputs)}")
    return in_grads


def _reachable_from(start_ops):
    seen = set(start_ops)
    stack = list(start_ops)
    while stack:
        op = stack.pop()
        for t in op.outputs:
            for c in t._consumers:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
    return seen


def _reaching(end_ops, within):
    seen = set()
    stack = [op for op in end_ops if op in within]
    seen.update(stack)
    while stack:
        op = stack.pop()
        for t in op.inputs:
            src = t.op
            if src in within and src not in seen:
                seen.add(src)
                stack.append(src)
    return seen


def hessians(ys, xs, name="hessians", colocate_gradients_with_ops=False,
             gate_gradients=False, aggregation_method=None):
    """The Hessian of sum(ys) for each x in xs, shaped x.shape + x.shape.

    TF builds it with a while_loop over the flattened first derivative; dtf unrolls that
    loop, one tf.gradients per element of x, so each x needs a fully known static shape
    (and a large x makes a large graph)."""
    from . import array_ops

    xs = xs if isinstance(xs, (list, tuple)) else [xs]
    result = []
    with _ops.name_scope(name):
        first = gradients(ys, xs)
        for g, x in zip(first, xs):
            x = _ops.convert_to_tensor(x)
            if not x.shape.is_fully_defined():
                raise NotImplementedError(
                    f"tf.hessians: {x.name} has shape {x.shape}; dtf needs a fully defined "
                    "shape (it unrolls TF's while_loop over the elements of x)")
            dims = x.shape.as_list()
            n = int(np.prod(dims)) if dims else 1
            if g is None:
                result.append(array_ops.zeros(dims + dims, dtype=x.dtype))
                continue
            flat = array_ops.reshape(g, [-1])
            rows = []
            for j in range(n):
                row = gradients(flat[j], x)[0]
                rows.append(array_ops.zeros_like(x) if row is None else row)
            result.append(array_ops.reshape(array_ops.stack(rows), dims + dims))
    return result

__all__ = ["gradients", "hessians"]  # what ``import dtf`` exports from this family
