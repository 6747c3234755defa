"""User functions of tf.data (map, filter, flat_map, ...): traced once into a graph of
their own, shipped as plain data inside the dataset's spec, compiled once per iterator
initialization into an executor plan and run by that plan for each element.

A function reads tensors of the graph around it (a constant, a placeholder, a tensor
computed earlier): tracing replaces each with a placeholder of the function's graph and
records the outer tensor as a *capture*, which the iterator's initializer passes in.
"""
from __future__ import annotations

import itertools
import threading

from dtf.framework import ops as _ops
from dtf.framework.graph_def import NodeDef, graph_to_def
from dtf.framework.tensor_shape import as_shape
from . import structure as nest

_function_ids = itertools.count()


class FuncGraph(_ops.Graph):
    """The graph a function is traced into; tensors of ``outer`` become captures."""

    def __init__(self, outer: _ops.Graph, name: str):
        super().__init__()
        self.outer = outer
        self.seed = outer.seed
        # Node names unique across functions: random ops keep per-node generators.
        self._name_stack = f"{name}_fn{next(_function_ids)}"
        self.captures: dict = {}  # outer Tensor -> placeholder Tensor here

    @property
    def building_function(self):
        return True

    def create_op(self, op_type, inputs, *args, **kwargs):
        inputs = [self.capture(t) if isinstance(t, _ops.Tensor) else t for t in inputs]
        return super().create_op(op_type, inputs, *args, **kwargs)

    def can_capture(self, graph) -> bool:
        """Whether a tensor of ``graph`` may be used here (and is then captured)."""
        if graph is self or graph is self.outer:
            return True
        return isinstance(self.outer, FuncGraph) and self.outer.can_capture(graph)

    def capture(self, tensor):
        """``tensor`` as a tensor of this graph (a placeholder fed with its value)."""
        if tensor.graph is self:
            return tensor
        if tensor.graph is not self.outer:
            if not isinstance(self.outer, FuncGraph):
                raise ValueError(f"Tensor {tensor.name} is from an unrelated graph: a dataset "
                                 "function can only use tensors of the graph it is built in")
            tensor = self.outer.capture(tensor)
        ph = self.captures.get(tensor)
        if ph is None:
            ph = self.placeholder(tensor.dtype, tensor.shape, "capture")
            self.captures[tensor] = ph
        return ph

    def placeholder(self, dtype, shape, name):
        dims = as_shape(shape).as_tuple_or_none()
        return _ops.Graph.create_op(self, "Placeholder", [], name=name, attrs={
            "dtype": dtype, "shape": None if dims is None else list(dims)})._outputs[0]


class TracedFunction:
    """A traced function: its graph, input placeholders, flat outputs and their structure."""

    def __init__(self, graph, inputs, outputs, output_structure, returned):
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.output_structure = output_structure
        self.returned = returned  # what the function returned, as a structure (or a Dataset)

    def spec(self, collector, extra_outputs=()) -> dict:
        """Plain data: the nodes, feed and fetch names, and the captures' indices in
        ``collector`` (the enclosing dataset's list of captured tensors)."""
        outer = list(self.graph.captures)
        return {"nodes": graph_to_def(self.graph),
                "inputs": [t.name for t in self.inputs],
                "capture_inputs": [self.graph.captures[t].name for t in outer],
                "captures": [collector.index(t) for t in outer],
                "outputs": [t.name for t in list(self.outputs) + list(extra_outputs)]}


def trace(fn, components, element_structure, name, returns_dataset=False):
    """Traces ``fn`` on placeholders of ``components`` ((dtype, shape) leaves packed as
    ``element_structure``). A tuple element is passed as positional arguments (TF1's rule);
    lists returned are read as tuples. ``returns_dataset``: fn returns a Dataset."""
    outer = _ops.get_default_graph()
    graph = FuncGraph(outer, name)
    with graph.as_default():
        phs = [graph.placeholder(dt, shape, f"arg{i}") for i, (dt, shape) in enumerate(components)]
        # A leaf may stand for something else than a tensor (a window's nested dataset).
        args = nest.pack_sequence_as(element_structure, [
            leaf.argument(ph) for leaf, ph in zip(nest.flatten(element_structure), phs)])
        result = fn(*args) if type(args) is tuple else fn(args)
        if returns_dataset:
            from .dataset_ops import Dataset

            if not isinstance(result, Dataset):
                raise TypeError(f"`{name}` must return a Dataset object, got {type(result).__name__}")
            return TracedFunction(graph, phs, [], None, result)
        if isinstance(result, list):
            result = tuple(result)
        flat = [graph.capture(_ops.convert_to_tensor(_dense_leaf(x, name)))
                for x in nest.flatten(result)]
        structure = nest.pack_sequence_as(result, flat)
    return TracedFunction(graph, phs, flat, structure, result)


def _dense_leaf(x, name):
    from dtf.ops.sparse_ops import SparseTensor

    if isinstance(x, SparseTensor):  # datasets of dtf carry dense components only
        raise TypeError(f"`{name}` returned a SparseTensor (e.g. from a VarLenFeature): dtf "
                        "datasets have no sparse components; return tf.sparse.to_dense(...) "
                        "or parse after batching, outside the dataset")
    return x


class Function:
    """A function spec compiled into a plan; call it with one element's component values."""

    def __init__(self, spec: dict, captured_values: list, plan=None):
        self.plan = plan or compile_plan(spec)
        self.extra = [captured_values[i] for i in spec["captures"]]

    def __call__(self, env, args) -> list:
        # Plan._run, not run: every caller is inside a step, which already set numpy's
        # error state (pipeline threads set theirs once), saving its cost per element.
        return self.plan._run(env.context(), list(args) + self.extra, None)


def compile_plan(spec: dict):
    """The executor plan of a function spec: feeds are its arguments, then its captures."""
    from dtf.runtime.executor import build_plan

    nodes = {d["name"]: NodeDef.from_dict(d) for d in spec["nodes"]}
    feeds = tuple(spec["inputs"]) + tuple(spec["capture_inputs"])
    return build_plan(nodes.__getitem__, tuple(spec["outputs"]), feeds, ())


class Env:
    """What running functions needs: the session's state, and one step context per thread
    (prefetch and parallel threads run functions beside the caller)."""

    def __init__(self, state):
        self.state = state
        self._local = threading.local()

    def context(self):
        ctx = getattr(self._local, "ctx", None)
        if ctx is None:
            from dtf.runtime.executor import StepContext

            ctx = self._local.ctx = StepContext(self.state)
        return ctx
