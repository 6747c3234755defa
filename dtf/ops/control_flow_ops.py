"""Control flow: no_op, group, tuple, with_dependencies."""
from __future__ import annotations

import builtins

from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op


@register_op("NoOp")
def _no_op_infer(inputs, attrs):
    return []


NotDifferentiable("NoOp")


def no_op(name=None):
    """An op that does nothing; useful as a control-dependency anchor."""
    return _ops.make_op("NoOp", [], {}, name=name or "NoOp")


def _as_op(x):
    if isinstance(x, _ops.Operation):
        return x
    if isinstance(x, _ops.Tensor):
        return x.op
    if hasattr(x, "op"):
        return x.op
    raise TypeError(f"Expected tf.group() expected Tensor arguments not {x!r} with type {type(x)}")


def group(*inputs, **kwargs):
    """An op that runs all ``inputs`` (grouped per device, as TF does)."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Unknown keyword arguments: {', '.join(kwargs)}")
    flat = []
    for i in inputs:
        if isinstance(i, (list, builtins.tuple)):  # `tuple` is tf.tuple below
            flat.extend(i)
        elif i is not None:
            flat.append(i)
    ops_ = [_as_op(x) for x in flat]
    with _ops.name_scope(name, "group_deps", ops_) as scope:
        by_device: dict[str, list] = {}
        for op in ops_:
            by_device.setdefault(op.device, []).append(op)
        if len(by_device) <= 1:
            with _ops.control_dependencies(ops_):
                return no_op(name=scope)
        deps = []
        for dev in sorted(by_device):
            with _ops.device(dev or None), _ops.control_dependencies(by_device[dev]):
                deps.append(no_op())
        with _ops.control_dependencies(deps):
            return no_op(name=scope)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF's name
    """Returns tensors that are available only after all of ``tensors`` are computed."""
    from .array_ops import identity

    with _ops.name_scope(name, "tuple", tensors) as scope:
        gate = group(*[t for t in tensors if t is not None], *(control_inputs or []), name=None)
        out = []
        for t in tensors:
            if t is None:
                out.append(None)
                continue
            with _ops.control_dependencies([gate]):
                out.append(identity(t))
        _ = scope
        return out


def with_dependencies(dependencies, output_tensor, name=None):
    from .array_ops import identity

    with _ops.name_scope(name, "control_dependency", list(dependencies) + [output_tensor]) as scope:
        with _ops.control_dependencies(dependencies):
            if isinstance(output_tensor, _ops.Operation):
                return group(output_tensor, name=scope)
            return identity(output_tensor, name=scope)

__all__ = ["group", "no_op", "tuple", "with_dependencies"]  # what ``import dtf`` exports from this family
