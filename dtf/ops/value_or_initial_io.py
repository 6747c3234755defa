"""``Variable.initialized_value()`` between dtf and TF.

dtf computes it with one op, ValueOrInitial (the variable's value, or its initial value
while it is not initialized). TF 1.15 builds a cond of TF1 dataflow ops: a functional If
cannot take the variable, since TF reads an If's inputs before it runs and reading an
uninitialized variable fails, while a RefSwitch forwards the reference and only the taken
side reads it. So the export writes TF's own cond:

    IsVariableInitialized(v) -> pred_id; RefSwitch(v, pred):1 -> read (Identity);
    Switch(initial, pred):0; Merge(Switch:0, read)   (named as the dtf op)

and the import (dtf/framework/importer.py's expansions) reads that shape back, from dtf or
from TF: a Switch forwards its input, a Merge of an initial value and an Identity of a
variable becomes ValueOrInitial. Any other Merge (TF1 control flow) is refused.
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes


def export_value_or_initial(d, ctx):
    data = [i for i in d["input"] if not i.startswith("^")]
    controls = [i for i in d["input"] if i.startswith("^")]
    ref, initial = data
    name, device = d["name"], d.get("device", "")
    t = _dtypes.as_dtype(d["attr"]["T"])
    cls = {"_class": d["attr"]["_class"]} if "_class" in d["attr"] else {}

    def node(suffix, op, inputs, attrs, out):
        full = f"{name}/{suffix}" if suffix else name
        return {"name": full, "op": op, "input": inputs, "device": device, "attr": attrs,
                "output_dtypes": [_dtypes.as_dtype(x).name for x in out]}

    return [
        node("IsVariableInitialized", "IsVariableInitialized", [ref] + controls,
             dict(cls, dtype=t), [_dtypes.bool]),
        node("pred_id", "Identity", [f"{name}/IsVariableInitialized:0"], {"T": _dtypes.bool},
             [_dtypes.bool]),
        node("read/Switch", "RefSwitch", [ref, f"{name}/pred_id:0"], dict(cls, T=t), [t, t]),
        node("read", "Identity", [f"{name}/read/Switch:1"], dict(cls, T=t), [t]),
        node("Switch_1", "Switch", [initial, f"{name}/pred_id:0"], {"T": t}, [t, t]),
        node("", "Merge", [f"{name}/Switch_1:0", f"{name}/read:0"], {"T": t, "N": 2}, [t, _dtypes.int32]),
    ]


def expand_switch(node, inputs, attrs):
    """A Switch (or RefSwitch) of initialized_value's cond: both sides are its input (the
    Merge below picks with ValueOrInitial, which reads the variable only when it is set)."""
    return [inputs[0], inputs[0]]


def _variable_behind(t):
    op = t.op
    while op.type == "Identity" and op.inputs:
        t = op.inputs[0]
        op = t.op
    return t if op.op_def.ref_output else None


def expand_merge(node, inputs, attrs):
    from .state_ops import value_or_initial

    if len(inputs) == 2:
        for var_side in (1, 0):
            ref = _variable_behind(inputs[var_side])
            if ref is not None and _variable_behind(inputs[1 - var_side]) is None:
                return [value_or_initial(ref, inputs[1 - var_side], name=node.name)]
    raise ValueError("Merge: TF1 dataflow control flow (Switch/Merge) is not supported by dtf "
                     "except as initialized_value()'s cond; export with control flow v2 "
                     "(functional If/While)")


__all__ = []
