"""tf.Print, tf.print, tf.Assert and tf.check_numerics.

They run where they are placed and report there: Print and print write to the output of
the process that runs them; Assert and CheckNumerics fail the step with
InvalidArgumentError naming the op, as TF's do.
"""
from __future__ import annotations

import sys

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op

from .common import convert

__all__ = ["Print", "print", "Assert", "check_numerics", "add_check_numerics_ops"]


@register_op("Print", stateful=True)
def _print_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


@register_op("PrintV2", stateful=True)
def _print_v2_infer(inputs, attrs):
    return []


@register_op("Assert", stateful=True)
def _assert_infer(inputs, attrs):
    if inputs[0].dtype != dtypes.bool:
        raise TypeError(f"Assert: the condition must be bool, not {inputs[0].dtype.name}")
    return []


@register_op("CheckNumerics", stateful=True)
def _check_numerics_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


NotDifferentiable("PrintV2")
NotDifferentiable("Assert")


@RegisterGradient("Print")
def _print_grad(op, grad):
    return [grad] + [None] * (len(op.inputs) - 1)


@RegisterGradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    return check_numerics(grad, "Not a number (NaN) or infinity (Inf) values detected in "
                                f"gradient. {op.get_attr('message')}")


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """Returns ``input_`` and, each time it is computed, writes ``message`` then every
    tensor of ``data`` (its first ``summarize`` elements, default 3) to stderr; only the
    first ``first_n`` times when given."""
    with _ops.name_scope(name, "Print", [input_]) as scope:
        x = convert(input_, "input")
        data = [convert(d, "data") for d in data]
        attrs = {"T": x.dtype, "U": [d.dtype for d in data], "message": message or "",
                 "first_n": -1 if first_n is None else int(first_n),
                 "summarize": 3 if summarize is None else int(summarize)}
        return _ops.make_tensor("Print", [x] + data, attrs, name=scope)


def _stream_name(stream):
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    from dtf import logging as tf_logging
    for level, fn in (("info", tf_logging.info), ("warning", tf_logging.warning),
                      ("warning", tf_logging.warn), ("error", tf_logging.error)):
        if stream is fn:  # TF also lets tf.print write through tf.logging
            return f"log({level})"
    if stream is sys.stderr or stream is sys.__stderr__:
        return "stderr"
    if stream is sys.stdout or stream is sys.__stdout__:
        return "stdout"
    raise ValueError(f"Unsupported output stream {stream!r}: tf.print in dtf writes to "
                     "sys.stderr, sys.stdout, tf.logging.info/warning/error or a 'file://' path")


def print(*inputs, **kwargs):  # noqa: A001 - TF's name
    """An op that writes ``inputs`` (tensors, strings, Python values and nests of them)
    when run, separated by ``sep`` and followed by ``end``, to ``output_stream``
    (sys.stderr by default, sys.stdout, tf.logging.info/warning/error, or "file://path").
    Tensors show their first and last ``summarize`` elements per dimension, numpy-style.
    Returns the op: run it, or make it a control dependency."""
    name = kwargs.pop("name", None)
    stream = _stream_name(kwargs.pop("output_stream", sys.stderr))
    summarize = kwargs.pop("summarize", 3)
    sep, end = kwargs.pop("sep", " "), kwargs.pop("end", "\n")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {sorted(kwargs)}")
    pieces, tensors = [""], []
    with _ops.name_scope(name, "PrintV2", []) as scope:
        for i, item in enumerate(inputs):
            if i:
                pieces[-1] += sep
            _add_item(item, pieces, tensors)
        # TF writes a lone scalar string tensor as it is; inside anything else, quoted.
        raw = (len(inputs) == 1 and len(tensors) == 1 and pieces == ["", ""]
               and tensors[0].dtype == dtypes.string and tensors[0].shape.ndims == 0)
        attrs = {"template": pieces, "end": end, "output_stream": stream,
                 "summarize": -1 if summarize is None else int(summarize), "raw_string": raw,
                 "T": [t.dtype for t in tensors]}
        return _ops.make_op("PrintV2", tensors, attrs, name=scope)


def _add_item(item, pieces, tensors):
    """Appends ``item`` to the template: tensors become slots, strings are written as
    they are, other values (nests holding tensors included) as str() shows them."""
    if isinstance(item, _ops.Tensor) or hasattr(item, "_as_graph_element"):
        tensors.append(convert(item))
        pieces.append("")
        return
    if isinstance(item, str):
        pieces[-1] += item
        return
    found = []
    marker = "\x00dtf-print-slot\x00"

    def swap(v):
        if isinstance(v, _ops.Tensor) or hasattr(v, "_as_graph_element"):
            found.append(convert(v))
            return _Marker(marker)
        if isinstance(v, dict):
            return {k: swap(v[k]) for k in sorted(v)}  # TF prints dicts by sorted key
        if isinstance(v, (list, tuple)):
            return type(v)(swap(x) for x in v)
        return v

    parts = str(swap(item)).split(marker)
    pieces[-1] += parts[0]
    for t, text in zip(found, parts[1:]):
        tensors.append(t)
        pieces.append(text)


class _Marker(str):
    """A tensor's slot in str() of a nest: its repr is the bare marker (a plain str would
    be quoted inside a list or dict), so the text splits cleanly around it."""

    def __repr__(self):
        return str(self)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802
    """An op that fails the step with InvalidArgumentError ("assertion failed: [...]",
    listing ``data``) when ``condition`` (a bool scalar or tensor, all of it) is False."""
    with _ops.name_scope(name, "Assert", [condition] + list(data)) as scope:
        cond = convert(condition, "condition", dtype=dtypes.bool)
        data = [convert(d, "data") for d in data]
        attrs = {"T": [d.dtype for d in data], "summarize": 3 if summarize is None else int(summarize)}
        return _ops.make_op("Assert", [cond] + data, attrs, name=scope)


def check_numerics(tensor, message, name=None):
    """Returns ``tensor``, failing the step with InvalidArgumentError ("<message> : Tensor
    had NaN values", Inf, or both) when it holds any; floating-point tensors only."""
    with _ops.name_scope(name, "CheckNumerics", [tensor]) as scope:
        x = convert(tensor, "tensor")
        if not x.dtype.is_floating:
            raise TypeError(f"Value passed to parameter 'tensor' has DataType {x.dtype.name} not "
                            "in list of allowed values: bfloat16, float16, float32, float64")
        return _ops.make_tensor("CheckNumerics", [x], {"T": x.dtype, "message": message},
                                name=scope)


def add_check_numerics_ops():
    """One op that check_numerics every float output (not variables' handles) of the
    default graph so far, chained in creation order as TF does, so the first NaN or Inf
    is reported by the op that produced it ("<op name>:<output index> : Tensor had ...")."""
    from .control_flow_ops import group
    checks = []
    for op in _ops.get_default_graph().get_operations():
        if op.op_def.ref_output:
            continue
        for output in op.outputs:
            if output.dtype.is_floating:
                with _ops.control_dependencies(checks):
                    checks = [check_numerics(output, f"{op.name}:{output.value_index}")]
    return group(*checks)
