"""tf.cond, tf.case and tf.switch_case as one functional ``If`` op holding both branches.

Each branch is built in its own body graph (dtf.framework.func_graph); the If op takes the
predicate and every outer tensor either branch uses, and its kernel runs only the branch
taken, pruned to what that branch's outputs need (as TF 1.x's cond runs only what its
outputs depend on). A last output records what the branch computed, for the gradient: an
If over the two branches' gradient bodies, which read those values.
"""
from __future__ import annotations

from dtf.framework import dtypes as _dtypes
from dtf.framework import ops as _ops
from dtf.framework.nest import is_namedtuple
from dtf.framework.op_registry import RegisterGradient
from dtf.framework.tensor_shape import TensorShape

from . import control_flow_graphs as cfg

cfg.register_control_flow_op("If", cfg.outputs_infer)


class _CondInfo:
    __slots__ = ("graphs", "outputs")

    def __init__(self, graphs, outputs):
        self.graphs = graphs      # the branches' body graphs, then first
        self.outputs = outputs    # per branch: its flat data outputs (tensors of its graph)


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """Returns ``true_fn()`` if ``pred`` is true else ``false_fn()``; only the taken
    branch runs. Outputs keep the branches' nested structure (a one-element list or tuple
    is unpacked unless ``strict``)."""
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    if not callable(true_fn):
        raise TypeError("true_fn must be callable.")
    if not callable(false_fn):
        raise TypeError("false_fn must be callable.")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool")
    with _ops.name_scope(name, "cond", [pred]) as scope:
        pred = _ops.convert_to_tensor(pred)
        if pred.dtype != _dtypes.bool:
            raise TypeError(f"pred must be a bool tensor, got {pred.dtype.name} ({pred.name})")
        if pred.shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {pred.shape.ndims} for 'cond' "
                             f"(pred: {pred.name})")
        return _build_if(pred, [true_fn, false_fn], scope, strict,
                         ("true_fn", "false_fn"))


def _build_if(pred, fns, scope, strict, fn_names):
    """An If over two branches (``fns``: then, else); the packed outputs."""
    graphs, results = [], []
    for fn, tag in zip(fns, ("true", "false")):
        fg = cfg.new_body(f"{scope}{tag}")
        with fg.as_default():
            results.append(fn())
        graphs.append(fg)
    if not strict:
        results = [_unpack_singleton(r) for r in results]
    structure = results[0]
    cfg.assert_same_structure(results[0], results[1], f"{fn_names[0]} and {fn_names[1]}")
    from .tensor_array_ops import TensorArray

    arrays = [[isinstance(x, TensorArray) for x in cfg.flatten(r)] for r in results]
    flats = [_branch_leaves(fg, r) for fg, r in zip(graphs, results)]
    kinds = [[isinstance(x, _ops.Operation) for x in flat] for flat in flats]
    if kinds[0] != kinds[1] or arrays[0] != arrays[1]:
        raise TypeError(f"Outputs of {fn_names[0]} and {fn_names[1]} must both be tensors, "
                        "both TensorArrays or both operations at each position")
    outputs = [[x for x in flat if not isinstance(x, _ops.Operation)] for flat in flats]
    targets = [[x for x in flat if isinstance(x, _ops.Operation)] for flat in flats]
    tout, shapes = [], []
    for a, b in zip(*outputs):
        if a.dtype != b.dtype:
            raise ValueError(f"Outputs of {fn_names[0]} and {fn_names[1]} must have the same "
                             f"type: {a.dtype.name}, {b.dtype.name}")
        tout.append(a.dtype)
        shapes.append(cfg.shape_list(_most_specific(a.shape, b.shape)))
    captures = cfg.outer_captures(*graphs)
    index = {t: i for i, t in enumerate(captures)}
    defs = [cfg.function_def(fg, outs, tg, index) for fg, outs, tg in zip(graphs, outputs, targets)]
    op = _ops.make_op("If", [pred] + captures, {
        "then_branch": defs[0], "else_branch": defs[1], "Tout": tout, "output_shapes": shapes,
        "ref_mask": cfg.ref_mask(captures), "history_input": -1, "record": True,
    }, name=scope)
    op._add_control_inputs(cfg.outer_controls(*graphs))
    cfg.colocate_with_variables(op, captures)
    cfg.remember(op, _CondInfo(graphs, outputs))
    data = iter(op.outputs[:-1])
    flat_out = [op if is_op else next(data) for is_op in kinds[0]]
    templates = cfg.flatten(results[0])
    flat_out = [templates[k]._like(t) if arrays[0][k] else t for k, t in enumerate(flat_out)]
    if not flat_out:
        return op
    return cfg.pack_sequence_as(structure, flat_out) if cfg.is_sequence(structure) else flat_out[0]


def _unpack_singleton(x):
    if isinstance(x, (list, tuple)) and len(x) == 1 and not is_namedtuple(x):
        return x[0]
    return x


def _branch_leaves(fg, result):
    """The branch's outputs as tensors of its own graph (or operations)."""
    from .tensor_array_ops import TensorArray

    out = []
    for leaf in cfg.flatten(result):
        if leaf is None:
            raise ValueError("true_fn and false_fn must return tensors, operations or values "
                             "convertible to tensors, not None")
        if isinstance(leaf, TensorArray):  # its buffer goes through the If
            leaf = leaf.flow
        if isinstance(leaf, _ops.Operation):
            if leaf.graph is not fg:
                raise ValueError(f"the operation {leaf.name} returned by a branch was not created "
                                 "in it")
            out.append(leaf)
            continue
        with fg.as_default():
            t = _ops.convert_to_tensor(leaf)
            out.append(fg.capture(t) if t.graph is not fg else t)
    return out


def _most_specific(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


@RegisterGradient("If")
def _if_grad(op, *grads):
    info = cfg.built_info(op)
    captures = op.inputs[1:]
    grads = grads[:-1]  # the history output has none
    float_caps = [i for i, t in enumerate(captures) if t.dtype.is_floating]
    if not float_caps:
        return [None] * len(op.inputs)
    # The output gradients both gradient bodies take (same outputs, same dtypes).
    wanted = [k for k, (y, g) in enumerate(zip(info.outputs[0], grads))
              if g is not None and y.dtype.is_floating]
    grad_ys = [_ops.convert_to_tensor(grads[k]) for k in wanted]
    scope = op.name + "_grad"
    bodies = []
    for b, (fwd, outs) in enumerate(zip(info.graphs, info.outputs)):
        bodies.append(_grad_body(fwd, [outs[k] for k in wanted], grad_ys,
                                 [captures[i] for i in float_caps], f"{scope}/{('true', 'false')[b]}"))
    outer = cfg.outer_captures(*(g for g, _ in bodies))
    n_g = len(grad_ys)
    index = {t: 1 + n_g + i for i, t in enumerate(outer)}
    keys = [1 + j for j in range(n_g)]
    defs = [cfg.function_def(g, outs, (), index, keys) for g, outs in bodies]
    inputs = [op.inputs[0], op.outputs[-1]] + grad_ys + outer
    with _ops.name_scope(None):
        grad_op = _ops.make_op("If", inputs, {
            "then_branch": defs[0], "else_branch": defs[1],
            "Tout": [captures[i].dtype for i in float_caps],
            "output_shapes": [cfg.shape_list(captures[i].shape) for i in float_caps],
            "ref_mask": cfg.ref_mask(inputs[1:]), "history_input": 0, "record": False,
        }, name=scope)
    colocate_with_op(grad_op, op)
    cfg.remember(grad_op, cfg.SECOND_ORDER)
    result = [None] * len(op.inputs)
    for i, t in zip(float_caps, grad_op.outputs[:-1]):
        result[1 + i] = t
    return result


def _grad_body(fwd, ys, grad_ys, captures, name):
    """The body computing d(ys)/d(captures) from the forward branch's recorded values;
    its outputs: one gradient per capture (zeros where the branch does not use it)."""
    from .array_ops import zeros_like
    from .gradients import gradients

    g = cfg.new_body(name, forward=fwd)
    placeholder_of = {source: ph for kind, source, ph in fwd.captures}
    with g.as_default():
        gys = [g.add_arg(gy.dtype, gy.shape, "grad") for gy in grad_ys]
        xs = [placeholder_of[c] for c in captures if c in placeholder_of]
        dxs = iter(gradients(ys, xs, grad_ys=gys) if ys and xs else [None] * len(xs))
        outs = []
        for c in captures:
            if c in placeholder_of:
                d = next(dxs)
                if d is None:
                    d = zeros_like(placeholder_of[c])
            else:
                d = zeros_like(c)
            d = _ops.convert_to_tensor(d)
            outs.append(g.capture(d) if d.graph is not g else d)
    return g, outs


def colocate_with_op(grad_op, op):
    """A gradient op reads its forward op's history: it runs on the same device."""
    root = _ops._colocation_root(op)
    grad_op._attrs["_class"] = [f"loc:@{root.name}"]
    grad_op._device = op.device


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The first ``fn`` whose ``pred`` is true, as nested conds. Without ``default`` the
    last pair serves as the default, and its predicate must hold when it is taken;
    ``exclusive`` checks at run time that at most one predicate is true."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    for p in pairs:
        if not isinstance(p, tuple) or len(p) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple, got {p!r}")
        if not callable(p[1]):
            raise TypeError(f"fn for pred {getattr(p[0], 'name', p[0])} must be callable.")
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    if default is None and not pairs:
        raise ValueError("Must provide at least one pred_fn_pair or a default")
    with _ops.name_scope(name, "case", [p for p, _ in pairs]) as scope:
        preds = [_ops.convert_to_tensor(p) for p, _ in pairs]
        for p in preds:
            if p.dtype != _dtypes.bool:
                raise TypeError(f"pred must be a bool tensor, got {p.dtype.name} ({p.name})")
        fns = [f for _, f in pairs]
        if default is None:
            last_pred, last_fn = preds.pop(), fns.pop()
            all_preds = preds + [last_pred]

            def default():
                check = _check_predicates([last_pred] + all_preds, "last_is_true")
                with _ops.control_dependencies([check]):
                    return last_fn()
        if exclusive and len(pairs) > 1:
            check = _check_predicates([p for p, _ in pairs], "at_most_one")
            with _ops.control_dependencies([check]):
                return _chain(preds, fns, default, strict, scope)
        return _chain(preds, fns, default, strict, scope)


def _check_predicates(preds, rule):
    """TF's Assert on the predicates: ``at_most_one`` is true (exclusive=True), or
    (``last_is_true``) the first one, the default's own predicate, is true."""
    from .array_ops import stack
    from .logging_ops import Assert
    from .math_ops import cast, less_equal
    from .reduction_ops import reduce_sum

    preds = [_ops.convert_to_tensor(p) for p in preds]
    if rule == "at_most_one":
        names = ", ".join(p.name for p in preds)
        count = reduce_sum(cast(stack(preds), _dtypes.int32))
        return Assert(less_equal(count, 1), [f"Input error: exclusive=True: more than 1 "
                                             f"conditions ({names}) evaluated as True:",
                                             stack(preds)], name="case_check")
    return Assert(preds[0], ["Input error: None of conditions evaluated as True:",
                             stack(preds[1:])], name="case_check")


def _chain(preds, fns, default, strict, scope):
    if not preds:
        out = default()
        return _unpack_singleton(out) if not strict else out

    def rest():
        return _chain(preds[1:], fns[1:], default, strict, scope)

    return cond(preds[0], fns[0], rest, strict=strict, name=None)


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """``branch_fns[branch_index]()`` (``default``, else the last branch, when the index is
    out of range); only that branch runs."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
        keys = [k for k, _ in items]
        if keys != list(range(len(keys))):
            raise ValueError(f"branch_fns keys must be 0..{len(keys) - 1}, got {keys}")
        fns = [f for _, f in items]
    else:
        fns = list(branch_fns)
    if not fns:
        raise ValueError("Must provide at least one item in branch_fns")
    for f in fns + ([default] if default is not None else []):
        if not callable(f):
            raise TypeError("fn must be callable.")
    from .math_ops import equal

    with _ops.name_scope(name, "switch_case", [branch_index]) as scope:
        index = _ops.convert_to_tensor(branch_index)
        if index.dtype != _dtypes.int32:
            raise TypeError(f"branch_index must be an int32 tensor, got {index.dtype.name}")
        if default is None:
            *fns, default = fns
        preds = [equal(index, i) for i in range(len(fns))]
        return _chain(preds, fns, default, False, scope)

__all__ = ["case", "cond", "switch_case"]  # what ``import dtf`` exports from this family
