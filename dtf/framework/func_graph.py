"""FuncGraph: the graph a control-flow body (a cond branch, a loop's cond or body, a
gradient of one of them) is built in, as TF's control flow v2 builds its function bodies.

A body uses tensors of the graphs around it freely; the first use of such a tensor
*captures* it: the body gets a placeholder (``_Arg``, or ``_RefArg`` for a variable it may
update) and the control-flow op gets the outer tensor as an input. A gradient body also
captures tensors of the forward body it differentiates (``forward``): those come at run
time from the values the forward op recorded (``history``), not from op inputs.

Names are drawn from the outermost graph's table, so every node of a body has a name unique
in the whole program (seeded random ops key their generators by node name).
"""
from __future__ import annotations

import contextlib

from .ops import Graph, Operation, Tensor

# Kinds of captured inputs.
OUTER = "outer"        # a tensor of an enclosing graph: an input of the control-flow op
HISTORY = "history"    # a tensor of the forward body: recorded by the forward op


class FuncGraph(Graph):
    """A body graph nested in ``outer``; ``forward`` is the body a gradient body reads."""

    def __init__(self, name: str, outer: Graph, forward: "FuncGraph | None" = None):
        super().__init__()
        self.outer = outer
        self.forward = forward
        self._names_in_use = outer._names_in_use
        self._name_stack = name
        self.seed = outer.seed
        self._collections = outer._collections
        self._gradient_override_map = outer._gradient_override_map
        self.args: list[Tensor] = []          # explicit arguments, in order
        self.captures: list[tuple] = []       # (kind, source tensor, placeholder), in order
        self._capture_of: dict = {}
        self.outer_control_inputs: list[Operation] = []

    @property
    def building_function(self):
        return True

    # get_variable inside a body finds (reuses) the variables of the graph around it.
    @property
    def _variable_store(self):
        return self.outer._variable_store

    @_variable_store.setter
    def _variable_store(self, value):
        if "outer" in self.__dict__:  # (Graph.__init__ sets it to None before outer exists)
            self.outer._variable_store = value

    def can_capture(self, graph) -> bool:
        """Whether a tensor of ``graph`` may be used here (and is then captured)."""
        if graph is self or graph is self.forward:
            return True
        outer = self.outer
        return outer.can_capture(graph) if isinstance(outer, FuncGraph) else graph is outer

    # -- arguments and captures ------------------------------------------------------
    def add_arg(self, dtype, shape, name="arg") -> Tensor:
        t = self._placeholder("_Arg", dtype, shape, name)
        self.args.append(t)
        return t

    def capture(self, t: Tensor) -> Tensor:
        if t.graph is self:
            return t
        ph = self._capture_of.get(t)
        if ph is not None:
            return ph
        if t.graph is self.forward:
            kind, source, op_type = HISTORY, t, "_Arg"
        else:
            outer = self.outer
            if isinstance(outer, FuncGraph):
                if not outer.can_capture(t.graph):
                    raise ValueError(f"Tensor {t.name} is not from this graph or one around it")
                source = outer.capture(t)
            elif t.graph is outer:
                source = t
            else:
                raise ValueError(f"Tensor {t.name} must be from the same graph as the "
                                 f"control-flow body {self._name_stack!r}")
            # A variable (or its `read` alias) is captured as a handle: the body reads it
            # when its reads run and may update it; any other tensor is captured by value.
            kind = OUTER
            op_type = "_RefArg" if ref_kind(source) else "_Arg"
        ph = self._placeholder(op_type, t.dtype, t.shape, t.op.name.rsplit("/", 1)[-1],
                               index=len(self.captures))
        self.captures.append((kind, source, ph))
        self._capture_of[t] = ph
        return ph

    def _placeholder(self, op_type, dtype, shape, name, index=None):
        saved, self._control_stack = self._control_stack, []
        saved_cls, self._colocation_stack = self._colocation_stack, []
        try:
            attrs = {"dtype": dtype, "shape": None if shape.ndims is None else shape.as_list()}
            if index is not None:
                attrs["capture_index"] = index
            return Graph.create_op(self, op_type, [], attrs=attrs, name=name)._outputs[0]
        finally:
            self._control_stack = saved
            self._colocation_stack = saved_cls

    # -- building --------------------------------------------------------------------
    def create_op(self, op_type, inputs, dtypes=None, input_types=None, name=None, attrs=None,
                  op_def=None, compute_shapes=True, compute_device=True):
        inputs = [self.capture(t) if isinstance(t, Tensor) and t.graph is not self else t
                  for t in inputs]
        op = super().create_op(op_type, inputs, dtypes, input_types, name, attrs, op_def,
                               compute_shapes, compute_device)
        if op.op_def.ref_output and op.op_def.stateful:
            raise ValueError(
                f"{op_type} '{op.name}' is created inside the body of a tf.cond or "
                f"tf.while_loop ('{self._name_stack}'): create variables and other state "
                "before the control-flow construct and use them inside it")
        return op

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Control inputs from the graphs around the body become control inputs of the
        control-flow op itself (they run before the body starts)."""
        if control_inputs is None:
            with super().control_dependencies(None):
                yield
            return
        inner = []
        for c in control_inputs:
            if callable(c) and not isinstance(c, (Tensor, Operation)) and not hasattr(c, "op"):
                c = c()
            op = c if isinstance(c, Operation) else c.op
            if op.graph is self:
                inner.append(op)
            elif self.can_capture(op.graph):
                self._add_outer_control(op)
            else:
                raise ValueError(f"{op.name} is not an element of this graph or one around it")
        with super().control_dependencies(inner):
            yield

    def _add_outer_control(self, op):
        outer = self.outer
        if op.graph is not outer and isinstance(outer, FuncGraph):
            outer._add_outer_control(op)
            return
        if op.graph is outer and op not in self.outer_control_inputs:
            self.outer_control_inputs.append(op)


# How a control-flow op takes a captured tensor (see dtf.runtime.functional).
BY_VALUE, BY_REF, BY_ALIAS = 0, 1, 2


def ref_kind(t: Tensor) -> int:
    """BY_REF for a variable's own output (a body may update it: it must be the variable
    itself); BY_ALIAS for an Identity chain over one (``v/read``): read at each use inside
    the body, as TF's aliasing read sees updates, but a copy will do when it comes from
    another device; else BY_VALUE."""
    op = t.op
    if op.op_def.ref_output:
        return BY_REF
    while op.op_def.forwards_ref and op.inputs:
        op = op.inputs[0].op
        if op.op_def.ref_output:
            return BY_ALIAS
    return BY_VALUE


@contextlib.contextmanager
def init_scope():
    """Builds in the outermost graph, outside any control-flow body and free of the body's
    control dependencies (TF's init_scope): where variables made inside a body live, so a
    loop body (an RNN cell's first call) can create the variables it then uses."""
    from .ops import get_default_graph

    graph = get_default_graph()
    if not isinstance(graph, FuncGraph):
        with graph.control_dependencies(None):
            yield graph
        return
    scope = graph.get_name_scope()  # kept: names read as if made where the call is
    while isinstance(graph, FuncGraph):
        graph = graph.outer
    with graph.as_default(), graph.control_dependencies(None), \
            graph.name_scope(f"{scope}/" if scope else None):
        yield graph


def graph_for_inputs(graph, default):
    """The graph an op over tensors of ``graph`` is created in: the default graph when it
    is a body that can capture them (so ops inside a branch or loop body land in it)."""
    # Any graph being traced that can capture: a control-flow body, or a dataset function.
    if graph is not default and hasattr(default, "can_capture") and default.can_capture(graph):
        return default
    return graph
