"""tf.custom_gradient and the IdentityN op it is built on.

As in TF 1.15's graph mode: ``f(*args)`` returns ``(y, grad_fn)``; y and the args pass
through one IdentityN op whose gradient is overridden, so tf.gradients reaching y calls
``grad_fn(dy)`` for the gradients of the args and nothing flows back through f's own ops.
"""
from __future__ import annotations

import functools
import itertools

from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.ops import GraphKeys

from .common import convert

__all__ = ["custom_gradient", "identity_n"]

_ids = itertools.count()


@register_op("IdentityN")
def _identity_n_infer(inputs, attrs):
    return [(t.dtype, t.shape) for t in inputs]


@RegisterGradient("IdentityN")
def _identity_n_grad(op, *grads):
    return list(grads)


def identity_n(input, name=None):  # noqa: A002
    """Each tensor of ``input`` passed through, as one op."""
    with _ops.name_scope(name, "IdentityN", list(input)) as scope:
        tensors = [convert(t, "input") for t in input]
        return _ops.make_op("IdentityN", tensors, {"T": [t.dtype for t in tensors]},
                            name=scope).outputs


def _flatten(value):
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flatten(v)]
    return [value]


def _pack_like(structure, flat):
    it = iter(flat)

    def pack(v):
        if isinstance(v, (list, tuple)):
            return type(v)(pack(x) for x in v)
        return next(it)
    return pack(structure)


def _variables():
    return set(map(id, _ops.get_collection(GraphKeys.GLOBAL_VARIABLES)
                   + _ops.get_collection(GraphKeys.LOCAL_VARIABLES)))


def custom_gradient(f):
    """Decorator: ``f(*args)`` returns ``(y, grad_fn)``; the gradient of y with respect to
    the args is ``grad_fn(*dys)`` (one gradient per arg). Variables created inside ``f``
    are refused, as TF 1.15 refuses non-resource variables there."""

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if kwargs:
            raise ValueError("The custom_gradient decorator currently supports keywords "
                             "arguments only when eager execution is enabled.")
        args = [_ops.convert_to_tensor(a) for a in args]
        before = _variables()
        result, grad_fn = f(*args)
        if _variables() - before:
            raise TypeError("All variables used by a function wrapped with @custom_gradient "
                            "must be `ResourceVariable`s; dtf's variables are not, so create "
                            "them outside the function.")
        flat = [_ops.convert_to_tensor(t) for t in _flatten(result)]
        n_results = len(flat)
        gradient_type = f"CustomGradient-{next(_ids)}"

        @RegisterGradient(gradient_type)
        def _grad(op, *result_grads):
            input_grads = grad_fn(*result_grads[:n_results])
            input_grads = _flatten(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            if len(input_grads) != len(args):
                raise ValueError(f"custom_gradient function {f.__name__}: grad_fn returned "
                                 f"{len(input_grads)} gradients for {len(args)} arguments")
            return [None] * n_results + input_grads

        with _ops.get_default_graph().gradient_override_map({"IdentityN": gradient_type}):
            passed = identity_n(flat + args)
        return _pack_like(result, passed[:n_results])

    return decorated
