"""The global step: one int64 scalar variable named "global_step" per graph."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys

__all__ = ["global_step", "get_global_step", "create_global_step", "get_or_create_global_step",
           "assert_global_step"]


def global_step(sess, global_step_tensor):
    """The current value of the global step, as a Python int."""
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor):
    from dtf.ops.variables import Variable

    if not isinstance(global_step_tensor, (Variable, _ops.Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.')
    if not global_step_tensor.dtype.is_integer:
        raise TypeError('Existing "global_step" does not have integer type: '
                        f"{global_step_tensor.dtype}")
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def get_global_step(graph=None):
    """The global step variable of ``graph`` (the default graph), or None."""
    graph = graph or _ops.get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        return None  # ambiguous, as in TF (which logs an error)
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph=None):
    """Creates the global step (ValueError if one exists)."""
    from dtf.ops import init_ops, variable_scope

    graph = graph or _ops.get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default() as g, g.name_scope(None):
        return variable_scope.get_variable(
            GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64,
            initializer=init_ops.zeros_initializer(), trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph=None):
    graph = graph or _ops.get_default_graph()
    step = get_global_step(graph)
    return create_global_step(graph) if step is None else step
