"""tf.while_loop as one functional ``While`` op holding its cond and body.

The While kernel iterates in Python over two compiled bodies (dtf.runtime.functional): no
frames, no dead tensors, no per-iteration scheduling in the executor. With ``back_prop``
every iteration's body values are recorded (TF's per-iteration stacks), and the gradient is
a ``_WhileGrad`` op that runs the body's gradient over those records in reverse, so loops
whose trip count is known only at run time differentiate.
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape

from . import control_flow_graphs as cfg
from .control_flow_cond import colocate_with_op
from .tensor_array_ops import TensorArray

cfg.register_control_flow_op("While", cfg.outputs_infer)


@register_op("_WhileGrad", stateful=True)
def _while_grad_infer(inputs, attrs):
    return list(zip(attrs["Tout"], attrs["output_shapes"]))


cfg._every_input_by_handle("_WhileGrad")


@RegisterGradient("_WhileGrad")
def _while_grad_grad(op, *grads):
    raise LookupError(f"No gradient for '{op.name}': second-order gradients through "
                      "tf.while_loop are not supported")


class _WhileInfo:
    __slots__ = ("body", "n_vars", "outputs", "shapes")

    def __init__(self, body, n_vars, outputs, shapes):
        self.body = body          # the body graph
        self.n_vars = n_vars
        self.outputs = outputs    # the body's flat outputs (tensors of its graph)
        self.shapes = shapes      # the loop variables' shape invariants


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """Repeats ``body`` while ``cond`` is true; returns the final loop variables in the
    structure of ``loop_vars`` (one variable unpacked unless ``return_same_structure``).
    ``parallel_iterations`` and ``swap_memory`` are hints that leave results unchanged:
    iterations run one after another and intermediates stay in memory."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if not isinstance(parallel_iterations, int) or parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if not isinstance(loop_vars, (list, tuple)):
        raise TypeError("loop_vars must be a list or tuple of loop variables, got "
                        f"{type(loop_vars).__name__}")
    if not loop_vars:
        raise ValueError("No loop variables provided")
    with _ops.name_scope(name, "while", cfg.flatten(loop_vars)) as scope:
        if maximum_iterations is not None:
            cond, body, loop_vars, shape_invariants = _counted(
                cond, body, loop_vars, shape_invariants, maximum_iterations)
        result = _build_while(cond, body, loop_vars, shape_invariants, back_prop, scope)
        if maximum_iterations is not None:
            result = result[1]
        if not return_same_structure and len(cfg.flatten(result)) == 1:
            return cfg.flatten(result)[0]
        return result


def _counted(cond, body, loop_vars, shape_invariants, maximum_iterations):
    """cond/body/vars with TF's iteration counter in front (``maximum_iterations``)."""
    from .math_ops import less, logical_and

    limit = _ops.convert_to_tensor(maximum_iterations, name="maximum_iterations")
    if limit.shape.ndims not in (None, 0):
        raise ValueError(f"maximum_iterations must be a scalar, saw shape: {limit.shape}")
    counter = _ops.convert_to_tensor(0, dtype=limit.dtype, name="iteration_counter")

    def counted_cond(i, lv):
        return logical_and(less(i, limit), cond(*lv))

    def counted_body(i, lv):
        return (i + 1, _as_loop_vars(body(*lv), lv))

    if shape_invariants is not None:
        shape_invariants = (TensorShape([]), shape_invariants)
    return counted_cond, counted_body, (counter, loop_vars), shape_invariants


def _build_while(cond, body, loop_vars, shape_invariants, back_prop, scope):
    leaves = cfg.flatten(loop_vars)
    arrays = [v if isinstance(v, TensorArray) else None for v in leaves]
    flat = [_ops.convert_to_tensor(v.flow if ta else v) for v, ta in zip(leaves, arrays)]
    n = len(flat)
    shapes = _invariants(flat, loop_vars, shape_invariants)
    # A TensorArray's buffer takes its rows' shape at its first write: no invariant.
    shapes = [TensorShape(None) if ta else s for s, ta in zip(shapes, arrays)]

    def packed(args):
        return cfg.pack_sequence_as(loop_vars, [ta._like(a) if ta else a for a, ta in zip(args, arrays)])

    cond_graph = cfg.new_body(f"{scope}cond")
    with cond_graph.as_default():
        args = [cond_graph.add_arg(t.dtype, s, "loop_var") for t, s in zip(flat, shapes)]
        pred = _ops.convert_to_tensor(cond(*packed(args)))
        pred = cond_graph.capture(pred) if pred.graph is not cond_graph else pred
    if pred.dtype != _dtypes.bool or pred.shape.ndims not in (None, 0):
        raise TypeError(f"cond must return a boolean scalar tensor, got {pred.dtype.name} with "
                        f"shape {pred.shape}")

    body_graph = cfg.new_body(f"{scope}body")
    with body_graph.as_default():
        args = [body_graph.add_arg(t.dtype, s, "loop_var") for t, s in zip(flat, shapes)]
        result = _as_loop_vars(body(*packed(args)), loop_vars)
        cfg.assert_same_structure(list(loop_vars), list(result), "The two structures")
        outs = []
        out_leaves = cfg.flatten(result)
        for leaf, ta in zip(out_leaves, arrays):
            if (ta is None) != (not isinstance(leaf, TensorArray)):
                raise TypeError(f"body returned {leaf!r} where the loop variable is "
                                f"{'a TensorArray' if ta else 'a tensor'}")
            t = _ops.convert_to_tensor(leaf.flow if ta else leaf)
            outs.append(body_graph.capture(t) if t.graph is not body_graph else t)
    for t, o, s in zip(flat, outs, shapes):
        _check_iteration(t, o, s)

    captures = cfg.outer_captures(cond_graph, body_graph)
    index = {t: n + i for i, t in enumerate(captures)}
    keys = list(range(n))
    op = _ops.make_op("While", flat + captures, {
        "cond": cfg.function_def(cond_graph, [pred], (), index, keys),
        "body": cfg.function_def(body_graph, outs, (), index, keys),
        "Tout": [t.dtype for t in flat], "output_shapes": [cfg.shape_list(s) for s in shapes],
        "ref_mask": [False] * n + cfg.ref_mask(captures), "n_vars": n,
        "back_prop": bool(back_prop), "record": bool(back_prop),
    }, name=scope)
    op._add_control_inputs(cfg.outer_controls(cond_graph, body_graph))
    cfg.colocate_with_variables(op, captures)
    cfg.remember(op, _WhileInfo(body_graph, n, outs, shapes))
    return cfg.pack_sequence_as(loop_vars, [leaf._like(t) if ta else t for t, leaf, ta
                                            in zip(op.outputs[:n], out_leaves, arrays)])


def _as_loop_vars(result, loop_vars):
    """A body may return its one loop variable bare (TF wraps what is not a structure)."""
    if len(loop_vars) == 1 and not cfg.is_sequence(result):
        return [result]
    return result


def _invariants(flat, loop_vars, shape_invariants):
    if shape_invariants is None:
        return [t.shape for t in flat]
    cfg.assert_same_structure(loop_vars, shape_invariants, "loop_vars and shape_invariants")
    shapes = [t.shape if s is None else as_shape(s) for t, s in
              zip(flat, _flatten_shapes(shape_invariants))]
    for t, s in zip(flat, shapes):
        if not _less_or_equal(t.shape, s):
            raise ValueError(f"The shape invariant specified for {t.name} is not compatible with "
                             f"the initial shape of the loop variable. It enters the loop with "
                             f"shape {t.shape}, but the specified shape invariant is {s}.")
    return shapes


def _flatten_shapes(structure):
    if isinstance(structure, TensorShape) or structure is None:
        return [structure]
    if isinstance(structure, dict):
        return [s for k in sorted(structure) for s in _flatten_shapes(structure[k])]
    return [s for item in structure for s in _flatten_shapes(item)]


def _less_or_equal(shape, invariant) -> bool:
    """``shape`` is at least as specific as ``invariant`` (TF's _ShapeLessThanOrEqual)."""
    if invariant.ndims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(d2 is None or d1 == d2 for d1, d2 in zip(shape.as_list(), invariant.as_list()))


def _check_iteration(entering, after, invariant):
    if after.dtype != entering.dtype:
        raise TypeError(f"Loop var {entering.name} enters the loop with type {entering.dtype!r} "
                        f"but has type {after.dtype!r} after 1 iteration. {entering.name} type "
                        "should remain constant.")
    if not _less_or_equal(after.shape, invariant):
        raise ValueError(f"Input tensor `{entering.name}` enters the loop with shape "
                         f"{_shape_str(invariant)}, but has shape {_shape_str(after.shape)} after "
                         "one iteration. To allow the shape to vary across iterations, use the "
                         "`shape_invariants` argument of tf.while_loop to specify a less-specific "
                         "shape.")


def _shape_str(shape):
    if shape.ndims is None:
        return "<unknown>"
    dims = ["None" if d is None else str(d) for d in shape.as_list()]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


@RegisterGradient("While")
def _while_grad(op, *grads):
    from .array_ops import zeros_like
    from .gradients import gradients

    if not op.get_attr("back_prop"):
        return [None] * len(op.inputs)
    info = cfg.built_info(op)
    n, body = info.n_vars, info.body
    captures = op.inputs[n:]
    placeholder_of = {source: ph for kind, source, ph in body.captures}
    float_vars = [j for j in range(n) if op.inputs[j].dtype.is_floating]
    float_caps = [i for i, c in enumerate(captures) if c.dtype.is_floating and c in placeholder_of]
    if not float_vars and not float_caps:
        return [None] * len(op.inputs)
    g = cfg.new_body(f"{op.name}_grad/body", forward=body)
    with g.as_default():
        gys = [g.add_arg(info.outputs[j].dtype, info.shapes[j], "grad") for j in float_vars]
        xs = ([body.args[j] for j in float_vars] + [placeholder_of[captures[i]] for i in float_caps])
        ys = [info.outputs[j] for j in float_vars]
        dxs = gradients(ys, xs, grad_ys=gys) if ys else [None] * len(xs)
        outs = []
        for x, d in zip(xs, dxs):
            d = _ops.convert_to_tensor(zeros_like(x) if d is None else d)
            outs.append(g.capture(d) if d.graph is not g else d)
    outer = cfg.outer_captures(g)
    nf = len(float_vars)
    index = {t: nf + i for i, t in enumerate(outer)}
    grad_in = [grads[j] if grads[j] is not None else zeros_like(op.outputs[j]) for j in float_vars]
    grad_in = [_ops.convert_to_tensor(t) for t in grad_in]
    tout = [op.inputs[j].dtype for j in float_vars] + [captures[i].dtype for i in float_caps]
    shapes = ([cfg.shape_list(info.shapes[j]) for j in float_vars]
              + [cfg.shape_list(captures[i].shape) for i in float_caps])
    inputs = [op.outputs[-1]] + grad_in + outer
    with _ops.name_scope(None):
        grad_op = _ops.make_op("_WhileGrad", inputs, {
            "body": cfg.function_def(g, outs, (), index, list(range(nf))), "Tout": tout,
            "output_shapes": shapes, "n_grads": nf, "cap_inputs": [n + i for i in float_caps],
            "ref_mask": [False] * (1 + nf) + cfg.ref_mask(outer),
        }, name=f"{op.name}_grad")
    colocate_with_op(grad_op, op)
    result = [None] * len(op.inputs)
    for k, j in enumerate(float_vars):
        result[j] = grad_op.outputs[k]
    for k, i in enumerate(float_caps):
        result[n + i] = grad_op.outputs[nf + k]
    return result

__all__ = ["while_loop"]  # what ``import dtf`` exports from this family
