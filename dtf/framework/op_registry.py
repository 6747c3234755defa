"""One table per concern, keyed by op type: op definitions (shape/dtype inference,
statefulness, reference inputs) and gradient functions.

Kernels have their own table in ``dtf.kernels.registry``. Registries fail loudly both
ways: registering a type twice names the first registration, and a miss lists what exists.

Op families that ``import dtf`` does not load (tf.data, tf.summary, ...) register their
definitions when first used: a miss here imports the module that ``registry_index`` names
for the type (a generated table, checked against the real registrations by a test) before
reporting the op as unknown.
"""
from __future__ import annotations

import difflib
import importlib
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
    module: str = field(default="", compare=False)  # the module whose import registered it


_OP_DEFS: dict[str, OpDef] = {}
_GRADIENTS: dict[str, Callable | None] = {}


def _where() -> str:
    # sys._getframe, not inspect.stack(): the latter reads source files for every frame and
    # made `import dtf` take over a second.
    frame = sys._getframe(2)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def defining_module() -> str:
    """The module whose import is running the caller: the innermost module-level frame.

    Registrations record it so the generated index can name, for each op type, the module
    to import; a helper in module A called from module B's top level counts as B's."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""


def load_indexed(table: dict, key) -> bool:
    """Imports the modules ``table[key]`` names (a module or a tuple of them); whether any."""
    mods = table.get(key)
    if not mods:
        return False
    for mod in (mods,) if isinstance(mods, str) else mods:
        importlib.import_module(mod)
    return True


def _load_op(op_type: str) -> bool:
    from dtf.framework import registry_index

    return load_indexed(registry_index.OPS, op_type) and op_type in _OP_DEFS


def register_op(op_type: str, *, stateful=False, ref_inputs=(), ref_output=False,
                forwards_ref=False):
    """Decorator: registers ``infer`` as the shape/dtype function of ``op_type``."""

    def deco(infer):
        if op_type in _OP_DEFS:
            raise KeyError(f"op {op_type!r} registered twice; first at {_OP_DEFS[op_type].defined_at}")
        _OP_DEFS[op_type] = OpDef(op_type, infer, stateful, tuple(ref_inputs), ref_output,
                                    forwards_ref, _where(), defining_module())
        return infer

    return deco


def get_op_def(op_type: str) -> OpDef:
    try:
        return _OP_DEFS[op_type]
    except KeyError:
        if _load_op(op_type):
            return _OP_DEFS[op_type]
        near = difflib.get_close_matches(op_type, _OP_DEFS, n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise KeyError(f"no op named {op_type!r} is registered{hint}") from None


def has_op(op_type: str) -> bool:
    return op_type in _OP_DEFS or _load_op(op_type)


def registered_ops() -> list[str]:
    """The op types registered so far (families load on first use: see the module doc)."""
    return sorted(_OP_DEFS)


def load_all_ops():
    """Imports every op family the index names (for listings: docs, coverage tests)."""
    from dtf.framework import registry_index

    for mods in set(registry_index.OPS.values()):
        load_indexed({0: mods}, 0)


def op_modules() -> dict[str, str]:
    """op type -> the module that registered it, for what has been imported so far."""
    return {t: d.module for t, d in _OP_DEFS.items()}


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
    # A family that loads on first use registers its gradients with its op definitions; a
    # graph built elsewhere (an imported GraphDef) may reach here before that import ran.
    if op_type not in _GRADIENTS and not (_load_op(op_type) and op_type in _GRADIENTS):
        raise LookupError(f"No gradient defined for operation of type '{op_type}'")
    return _GRADIENTS[op_type]


def has_gradient_entry(op_type: str) -> bool:
    """Whether a gradient or NotDifferentiable is registered for ``op_type``."""
    return op_type in _GRADIENTS or (_load_op(op_type) and op_type in _GRADIENTS)
