"""One table per concern, keyed by op type: op definitions (shape/dtype inference,
statefulness, reference inputs) and gradient functions.

Kernels have their own table in ``dtf.kernels.registry``. Registries fail loudly both
ways: registering a type twice names the first registration, and a miss lists what exists.
"""
from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class OpDef:
    """What the graph layer knows about an op type.

    ``infer(inputs, attrs)`` returns one ``(dtype, shape)`` per output; it raises
    ValueError for a shape that can never work (TF's graph-construction errors).
    ``ref_inputs`` are input positions that take a variable handle instead of its value;
    such ops are colocated with the variable. ``ref_output`` marks ops whose output 0 is
    a handle (variables); ``forwards_ref`` ops (Identity) pass a handle through unread. ``stateful`` ops are never pruned into constants or deduplicated.
    """

    type: str
    infer: Callable
    stateful: bool = False
    ref_inputs: tuple = ()
    ref_output: bool = False
    forwards_ref: bool = False
    defined_at: str = field(default="", compare=False)


_OP_DEFS: dict[str, OpDef] = {}
_GRADIENTS: dict[str, Callable | None] = {}


def _where() -> str:
    # sys._getframe, not inspect.stack(): the latter reads source files for every frame and
    # made `import dtf` take over a second.
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def register_op(op_type: str, *, stateful=False, ref_inputs=(), ref_output=False,
                forwards_ref=False):
    """Decorator: registers ``infer`` as the shape/dtype function of ``op_type``."""

    def deco(infer):
        if op_type in _OP_DEFS:
            raise KeyError(f"op {op_type!r} registered twice; first at {_OP_DEFS[op_type].defined_at}")
        _OP_DEFS[op_type] = OpDef(op_type, infer, stateful, tuple(ref_inputs), ref_output,
                                    forwards_ref, _where())
        return infer

    return deco


def get_op_def(op_type: str) -> OpDef:
    try:
        return _OP_DEFS[op_type]
    except KeyError:
        near = difflib.get_close_matches(op_type, _OP_DEFS, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise KeyError(f"no op named {op_type!r} is registered{hint}") from None


def has_op(op_type: str) -> bool:
    return op_type in _OP_DEFS


def registered_ops() -> list[str]:
    return sorted(_OP_DEFS)


class RegisterGradient:
    """Decorator registering the gradient function of an op type (TF's API)."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn):
        if self._op_type in _GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        _GRADIENTS[self._op_type] = fn
        return fn


def NotDifferentiable(op_type: str):  # noqa: N802 - TF's public name
    """Declares that ``op_type`` has no gradient (its inputs get None)."""
    if op_type in _GRADIENTS:
        raise KeyError(f"Registering two gradient with name '{op_type}'!")
    _GRADIENTS[op_type] = None


NoGradient = NotDifferentiable


def get_gradient_function(op_type: str):
    """The registered gradient; None if not differentiable; LookupError if unknown."""
    if op_type not in _GRADIENTS:
        raise LookupError(f"No gradient defined for operation of type '{op_type}'")
    return _GRADIENTS[op_type]
