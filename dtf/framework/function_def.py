"""Functions as TF's FunctionDef protos, and the ``library`` of a GraphDef that holds them.

A function body in dtf is plain data: node dicts in the form of
``dtf.framework.graph_def.NodeDef.to_dict()`` (name, op, input as ``"node:index"`` or
``"^node"``, device, attr, output_dtypes). A FunctionDef spells the same nodes TF's way:
a tensor is ``arg`` (an input of the function) or ``node:output_arg:index``, where
``output_arg`` is the name TF's OpDef gives that output (``MatMul:product:0``,
``split:output:2``). Those names come from TF's op registry through a generated table
(dtf/framework/op_output_args.py, written by scripts/op_output_args.py), imported on first
use so ``import dtf`` does not pay for it.

The stable API, shared by every exporter of functions (control flow, tf.data):

- ``output_names(op_type, attrs, n_outputs)``: TF's ``"arg:index"`` of each output.
- ``output_index(op_type, attrs, arg, index)``: the flat output index of ``arg:index``.
- ``FunctionLibrary``: the functions of one GraphDef; ``add``, ``get``, ``unique_name``,
  ``proto()`` / ``from_proto()``.
- ``make_function_def(name, nodes, args, outputs, library, ...)``: a FunctionDef of node
  dicts whose argument placeholders are named in ``args``. Nodes that hold functions
  themselves (If, While) are exported through the node-exporter registry
  (dtf/framework/node_export.py) into the same ``library``.
- ``FuncRef``: the value of a ``func`` attr (a function's name and attrs).
"""
from __future__ import annotations

import re

from . import dtypes as _dtypes
from . import graph_pb as pb
from .graph_io import FuncRef  # noqa: F401  (re-exported: the value of a func attr)

_OUTPUT_ARGS = None


def _table():
    global _OUTPUT_ARGS
    if _OUTPUT_ARGS is None:
        from .op_output_args import OUTPUT_ARGS

        _OUTPUT_ARGS = OUTPUT_ARGS
    return _OUTPUT_ARGS


# -- output argument names ----------------------------------------------------------------
def _arg_sizes(op_type, attrs, n_outputs):
    """[(arg name, number of tensors)] of a node's outputs; None sizes are resolved from the
    node's output count when exactly one argument's size is unknown."""
    args = _table().get(op_type)
    if args is None:  # an op TF lacks: one list argument, as dtf's own functions read it
        return [("output", n_outputs)]
    sizes = []
    for name, number_attr, type_list_attr in args:
        if number_attr:
            n = attrs.get(number_attr)
            sizes.append([name, None if n is None else int(n)])
        elif type_list_attr:
            types = attrs.get(type_list_attr)
            sizes.append([name, None if types is None else len(types)])
        else:
            sizes.append([name, 1])
    unknown = [s for s in sizes if s[1] is None]
    if unknown:
        if n_outputs is None or len(unknown) > 1:
            raise ValueError(f"{op_type}: cannot tell how many tensors its output arguments "
                             f"{[s[0] for s in unknown]} hold (attrs missing)")
        unknown[0][1] = n_outputs - sum(s[1] for s in sizes if s[1] is not None)
    return [tuple(s) for s in sizes]


def output_names(op_type: str, attrs: dict, n_outputs: int) -> list[str]:
    """TF's name of each output of a node, as a FunctionDef refers to it: ``"arg:index"``."""
    names = [f"{name}:{i}" for name, n in _arg_sizes(op_type, attrs, n_outputs) for i in range(n)]
    if len(names) != n_outputs:
        raise ValueError(f"{op_type}: TF's op definition gives {len(names)} outputs "
                         f"({names}), the node has {n_outputs}")
    return names


def output_index(op_type: str, attrs: dict, arg: str, index: int, n_outputs=None) -> int:
    """The flat output index of ``arg:index`` of a node (the inverse of output_names)."""
    start = 0
    sizes = _arg_sizes(op_type, attrs, n_outputs)
    for name, n in sizes:
        if name == arg:
            if not 0 <= index < n:
                raise ValueError(f"{op_type} has {n} tensors in its output {arg!r}, "
                                 f"not an index {index}")
            return start + index
        start += n
    raise ValueError(f"{op_type} has no output argument {arg!r}; it has "
                     f"{[name for name, _ in sizes]}")


# -- the library --------------------------------------------------------------------------
class FunctionLibrary:
    """The functions of one GraphDef, by name (a name is defined once)."""

    def __init__(self, functions=()):
        self._functions: dict[str, pb.FunctionDef] = {}
        # State exporters share across one export, a graph and every body in it (e.g.
        # what a gradient op in one body needs its forward op in another to output).
        self.memo: dict = {}
        self._reserved: set = set()  # names handed out by unique_name
        for f in functions:
            self.add(f)

    @classmethod
    def from_proto(cls, library: pb.FunctionDefLibrary) -> "FunctionLibrary":
        if library.gradient:
            names = [g.function_name for g in library.gradient]
            raise ValueError(f"FunctionDefLibrary: gradient functions ({names}) are not "
                             "supported by dtf")
        return cls(library.function)

    def add(self, fdef: pb.FunctionDef) -> str:
        name = fdef.signature.name
        if not name:
            raise ValueError("a FunctionDef needs a signature name")
        prev = self._functions.get(name)
        if prev is not None and prev.SerializeToString() != fdef.SerializeToString():
            raise ValueError(f"function {name!r} is defined twice, differently")
        self._functions[name] = fdef
        return name

    def get(self, name: str) -> pb.FunctionDef:
        try:
            return self._functions[name]
        except KeyError:
            known = ", ".join(sorted(self._functions)) or "none"
            raise KeyError(f"function {name!r} is not in the GraphDef's library "
                           f"(it has: {known})") from None

    def unique_name(self, hint: str) -> str:
        """A function name from ``hint`` not used yet (TF's names: letters, digits, _ . -)."""
        base = re.sub(r"[^A-Za-z0-9_.\-]", "_", hint) or "function"
        if not base[0].isalpha():
            base = "f_" + base
        name, k = base, 1
        while name in self._functions or name in self._reserved:
            name, k = f"{base}_{k}", k + 1
        self._reserved.add(name)
        return name

    def __contains__(self, name):
        return name in self._functions

    def __len__(self):
        return len(self._functions)

    def __iter__(self):
        return iter(self._functions.values())

    def proto(self) -> pb.FunctionDefLibrary:
        return pb.FunctionDefLibrary(function=list(self._functions.values()))


# -- nodes -> FunctionDef -------------------------------------------------------------------
def _arg_name(hint: str, used: set) -> str:
    """A valid, unused signature argument name (TF: ``[a-z][a-z0-9_]*``)."""
    base = re.sub(r"[^a-z0-9_]", "_", hint.rsplit("/", 1)[-1].split(":")[0].lower()).strip("_")
    if not base or not base[0].isalpha():
        base = "arg_" + base if base else "arg"
    name, k = base, 1
    while name in used:
        name, k = f"{base}_{k}", k + 1
    used.add(name)
    return name


def _split(name: str):
    op, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return op, int(idx)
    return name, 0


def make_function_def(name: str, nodes, args, outputs, library: FunctionLibrary,
                      control_outputs=(), arg_names=None, output_names_=None,
                      description="") -> pb.FunctionDef:
    """The FunctionDef ``name`` of a body given as node dicts.

    ``args``: ``[(node name, dtype)]``, the function's inputs in order; each names the
    placeholder node (output 0) that stands for the argument in ``nodes``: it is not
    written, its uses read the argument. A name may repeat (two inputs, one placeholder:
    the first is used). ``outputs``: tensor names (``"node:index"``) the function returns,
    in order. ``control_outputs``: node names that must run (``control_ret``).
    ``arg_names``/``output_names_``: signature names to use (else made from the nodes').
    Nodes holding functions (If, While, ...) are exported by their registered exporters,
    their functions added to ``library``. The caller adds the result to ``library``."""
    from .graph_io import encode_node_def
    from .node_export import export_nodes

    nodes = export_nodes([_as_dict(d) for d in nodes], library)
    used: set = set()
    node_names = {d["name"] for d in nodes} - {node for node, _ in args}
    used |= {n.lower() for n in node_names}  # an argument may not shadow a node
    sig = pb.OpDef(name=name, description=description)
    arg_of = {}  # placeholder node name -> argument name
    for i, (node_name, dtype) in enumerate(args):
        hint = arg_names[i] if arg_names else node_name
        a = _arg_name(hint, used)
        sig.input_arg.add(name=a, type=pb.datatype_enum(_dtypes.as_dtype(dtype)))
        arg_of.setdefault(node_name, a)
    by_name = {d["name"]: d for d in nodes}

    def ref(tensor: str) -> str:
        op, idx = _split(tensor)
        if op in arg_of:
            if idx:
                raise ValueError(f"function {name!r}: argument placeholder {op!r} has one output")
            return arg_of[op]
        d = by_name.get(op)
        if d is None:
            raise ValueError(f"function {name!r}: tensor {tensor!r} names no node of the body")
        return f"{op}:{_names_of(d)[idx]}"

    fdef = pb.FunctionDef(signature=sig)
    for d in nodes:
        if d["name"] in arg_of:
            continue
        inputs = [f"^{i[1:]}" if i.startswith("^") else ref(i) for i in d["input"]]
        if any(i[1:] in arg_of for i in inputs if i.startswith("^")):
            inputs = [i for i in inputs if not (i.startswith("^") and i[1:] in arg_of)]
        fdef.node_def.append(encode_node_def(d, inputs, in_function=True))
    out_used: set = set()
    for k, tensor in enumerate(outputs):
        hint = output_names_[k] if output_names_ else f"output_{k}"
        a = _arg_name(hint, out_used)
        op, _ = _split(tensor)
        # (a name or DataType, not a DType: a tf.data function returns TF's "variant", which
        # dtf lacks, built in the body or passed through from an argument)
        enum = (_arg_type(sig, arg_of[op]) if op in arg_of
                else pb.datatype_enum(by_name[op]["output_dtypes"][_split(tensor)[1]]))
        sig.output_arg.add(name=a, type=enum)
        fdef.ret[a] = ref(tensor)
    for op in control_outputs:
        if op not in by_name:
            raise ValueError(f"function {name!r}: control output {op!r} names no node of the body")
        sig.control_output.append(op)
        fdef.control_ret[op] = op
    return fdef


def _arg_type(sig, arg_name) -> int:
    for a in sig.input_arg:
        if a.name == arg_name:
            return a.type
    raise KeyError(arg_name)


def _names_of(d: dict) -> list[str]:
    names = d.get("_output_names")
    if names is None:
        names = output_names(d["op"], d["attr"], len(d["output_dtypes"]))
        d["_output_names"] = names
    return names


def _as_dict(d):
    if isinstance(d, dict):
        return dict(d)
    return d.to_dict()  # a graph_def.NodeDef


def add_function(library: FunctionLibrary, name_hint: str, nodes, args, outputs,
                 control_outputs=(), **kwargs) -> str:
    """``make_function_def`` under a fresh name made from ``name_hint``, added to
    ``library``; returns the name (what a ``func`` attr names: ``FuncRef(name)``)."""
    name = library.unique_name(name_hint)
    return library.add(make_function_def(name, nodes, args, outputs, library,
                                          control_outputs, **kwargs))


__all__ = ["FuncRef", "FunctionLibrary", "add_function", "make_function_def", "output_index",
           "output_names"]
