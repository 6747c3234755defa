"""tf.map_fn, tf.scan, tf.foldl and tf.foldr: TF1's loops over the first dimension, built as
TF builds them, from tf.while_loop and tf.TensorArray (so their gradients come for free)."""
from __future__ import annotations

from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import Dimension, TensorShape

from . import control_flow_graphs as cfg
from .control_flow_while import while_loop
from .tensor_array_ops import TensorArray


def _structure_fns(structure):
    """(flatten, pack) for values laid out like ``structure`` (a lone value is not wrapped)."""
    if cfg.is_sequence(structure):
        return cfg.flatten, lambda flat: cfg.pack_sequence_as(structure, flat)
    return (lambda x: [x]), (lambda flat: flat[0])


def _length(elems_flat):
    static = elems_flat[0].shape
    if static.ndims is not None and static.ndims < 1:
        if len(elems_flat) == 1:
            raise ValueError("elems must be a 1+ dimensional Tensor, not a scalar")
        raise ValueError("elements in elems must be 1+ dimensional Tensors, not scalars")
    from .array_ops import shape

    known = static[0].value if static.ndims else None
    n_static = Dimension(known)
    for e in elems_flat[1:]:
        if e.shape.ndims:
            n_static = n_static.merge_with(e.shape[0])
    return (known if known is not None else shape(elems_flat[0])[0]), n_static


def _unstacked(elems_flat):
    return [TensorArray(e.dtype, size=_length([e])[0], infer_shape=True).unstack(e)
            for e in elems_flat]


def _set_first_dim(results, n_static):
    for r in results:
        if r.shape.ndims is not None:
            r.set_shape(TensorShape([n_static.value]).concatenate(r.shape[1:]))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None):
    """``fn`` applied to each slice of ``elems`` along dimension 0, the results stacked;
    ``dtype`` gives the output structure when it differs from ``elems``'."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    in_flatten, in_pack = _structure_fns(elems)
    out_flatten, out_pack = (in_flatten, in_pack) if dtype is None else _structure_fns(dtype)
    with _ops.name_scope(name, "map", in_flatten(elems)):
        elems_flat = [_ops.convert_to_tensor(e, name="elem") for e in in_flatten(elems)]
        dtype = dtype if dtype is not None else in_pack([e.dtype for e in elems_flat])
        n, n_static = _length(elems_flat)
        elems_ta = _unstacked(elems_flat)
        accs = [TensorArray(dt, size=n, infer_shape=infer_shape) for dt in out_flatten(dtype)]

        def compute(i, tas):
            value = fn(in_pack([ta.read(i) for ta in elems_ta]))
            cfg.assert_same_structure(dtype, value, "dtype and the output of fn")
            return i + 1, [ta.write(i, v) for ta, v in zip(tas, out_flatten(value))]

        _, out = while_loop(lambda i, _: i < n, compute, (_ops.convert_to_tensor(0), accs),
                            parallel_iterations=parallel_iterations or 10, back_prop=back_prop,
                            swap_memory=swap_memory, maximum_iterations=n)
        results = [ta.stack() for ta in out]
        _set_first_dim(results, n_static)
        return out_pack(results)


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
         infer_shape=True, reverse=False, name=None):
    """Every intermediate accumulator of ``a = fn(a, x)`` over the slices of ``elems``
    (from the last slice first with ``reverse``), stacked."""
    if not callable(fn):
        raise TypeError("fn must be callable.")
    in_flatten, in_pack = _structure_fns(elems)
    structure = elems if initializer is None else initializer
    out_flatten, out_pack = _structure_fns(structure)
    with _ops.name_scope(name, "scan", in_flatten(elems)):
        elems_flat = [_ops.convert_to_tensor(e, name="elem") for e in in_flatten(elems)]
        n, n_static = _length(elems_flat)
        elems_ta = _unstacked(elems_flat)
        if initializer is None:
            a_flat = [ta.read(n - 1 if reverse else 0) for ta in elems_ta]
            start = 1
        else:
            a_flat = [_ops.convert_to_tensor(a) for a in out_flatten(initializer)]
            start = 0
        accs = [TensorArray(a.dtype, size=n, element_shape=a.shape if infer_shape else None,
                            infer_shape=infer_shape) for a in a_flat]
        if initializer is None:
            accs = [ta.write(n - 1 if reverse else 0, a) for ta, a in zip(accs, a_flat)]

        def compute(i, a_flat, tas):
            a_out = fn(out_pack(a_flat), in_pack([ta.read(i) for ta in elems_ta]))
            cfg.assert_same_structure(structure, a_out, "elems or initializer and the output of fn")
            flat = out_flatten(a_out)
            return (i - 1 if reverse else i + 1), flat, [ta.write(i, v) for ta, v in zip(tas, flat)]

        if reverse:
            i0, cond = n - 1 - start, (lambda i, _1, _2: i >= 0)
        else:
            i0, cond = start, (lambda i, _1, _2: i < n)
        _, _, out = while_loop(cond, compute, (_ops.convert_to_tensor(i0), a_flat, accs),
                               parallel_iterations=parallel_iterations, back_prop=back_prop,
                               swap_memory=swap_memory, maximum_iterations=n)
        results = [ta.stack() for ta in out]
        _set_first_dim(results, n_static)
        return out_pack(results)


def _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name, scope,
          from_right):
    if not callable(fn):
        raise TypeError("fn must be callable.")
    with _ops.name_scope(name, scope, cfg.flatten(elems)):
        flat = [_ops.convert_to_tensor(e, name="elem") for e in cfg.flatten(elems)]
        n, _ = _length(flat)
        tas = _unstacked(flat)
        pack = (lambda values: cfg.pack_sequence_as(elems, values)) if cfg.is_sequence(elems) \
            else (lambda values: values[0])
        if from_right:
            i0 = (n - 1) if initializer is None else n
        else:
            i0 = 1 if initializer is None else 0
        a = pack([ta.read(i0 if from_right else 0) for ta in tas]) if initializer is None \
            else initializer

        def compute(i, a):
            if from_right:
                i = i - 1
                return [i, fn(a, pack([ta.read(i) for ta in tas]))]
            return [i + 1, fn(a, pack([ta.read(i) for ta in tas]))]

        cond = (lambda i, a: i > 0) if from_right else (lambda i, a: i < n)
        _, result = while_loop(cond, compute, [_ops.convert_to_tensor(i0), a],
                               parallel_iterations=parallel_iterations, back_prop=back_prop,
                               swap_memory=swap_memory, maximum_iterations=n)
        return result


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
          name=None):
    """``fn(...fn(fn(initializer, x0), x1)..., xn-1)`` over the slices of ``elems`` (the
    first slice is the initializer when none is given)."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 "foldl", from_right=False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
          name=None):
    """foldl from the last slice to the first."""
    return _fold(fn, elems, initializer, parallel_iterations, back_prop, swap_memory, name,
                 "foldr", from_right=True)

__all__ = ["foldl", "foldr", "map_fn", "scan"]  # what ``import dtf`` exports from this family
