"""Graph <-> plain data. A NodeDef is what the placement, partition, wire and executor
stages see: no Python objects beyond numbers, strings, lists, dicts, DTypes and arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import dtypes as _dtypes


@dataclass
class NodeDef:
    """One node as plain data. ``inputs`` are "op:idx" names; controls are op names."""

    name: str
    op: str
    inputs: list = field(default_factory=list)
    control_inputs: list = field(default_factory=list)
    device: str = ""
    attrs: dict = field(default_factory=dict)
    output_dtypes: list = field(default_factory=list)  # DType objects

    @property
    def dtype_key(self):
        """The dtype kernels are chosen by: attr T, else attr dtype, else output 0."""
        t = self.attrs.get("T") or self.attrs.get("dtype")
        if t is None and self.output_dtypes:
            t = self.output_dtypes[0]
        return t

    def to_dict(self) -> dict:
        return {
            "name": self.name, "op": self.op,
            "input": list(self.inputs) + [f"^{c}" for c in self.control_inputs],
            "device": self.device, "attr": self.attrs,
            "output_dtypes": [d.name for d in self.output_dtypes],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "NodeDef":
        inputs, controls = [], []
        for i in d.get("input", []):
            (controls.append(i[1:]) if i.startswith("^") else inputs.append(i))
        return cls(d["name"], d["op"], inputs, controls, d.get("device", ""),
                   dict(d.get("attr", {})),
                   [_dtypes.as_dtype(x) for x in d.get("output_dtypes", [])])


def node_def_of(op) -> NodeDef:
    """NodeDef of an Operation, cached on the op (ops are immutable once made, except for
    control inputs added later, which invalidate the cache)."""
    cached = getattr(op, "_cached_node_def", None)
    if cached is not None and cached[0] == (len(op._control_inputs), op._device):
        return cached[1]
    nd = NodeDef(op.name, op.type, [t.name for t in op._inputs],
                 [c.name for c in op._control_inputs], op._device, op._attrs,
                 [t.dtype for t in op._outputs])
    op._cached_node_def = ((len(op._control_inputs), op._device), nd)
    return nd


def graph_to_def(graph) -> list[dict]:
    return [node_def_of(op).to_dict() for op in graph.get_operations()]
