"""tf.cond's If and tf.while_loop's While (and their gradients) as TF's functional ops.

dtf's If and While keep their bodies as plain data and hand their gradient ops a run record
(every value a body computed); TF's If/While name FunctionDefs and have no such record. So
an exported graph says with tensors what the record said, as TF's control flow v2 does:

- A forward If whose record a gradient If reads outputs, after its own outputs, each
  branch value the gradient bodies read (the branch not taken outputs a scalar zero in
  its place: the gradient branch that would read it is not taken either). The gradient
  If takes those outputs where dtf's took the record.
- A forward While whose record a ``_WhileGrad`` reads carries, as extra loop variables,
  an iteration counter and for each value the gradient body reads two accumulators: the
  values, flattened and concatenated, and their shapes, each followed by its rank. The
  gradient is a second While that counts the iterations down, slices each iteration's
  values back off the end of the accumulators and runs the gradient body on them, summing
  the gradients of captured tensors (as ``_WhileGrad`` does). TF's own v2 gradient uses
  TensorList stacks; plain Concat/Slice/Reshape ops are used here because both TF and dtf
  run them with no new op type and no variant tensors (the copy per iteration in the
  forward loop is the price).

Loop-invariant captures become loop variables the body passes through (TF's While has no
captures). A body that assigns to a variable it captured cannot be exported: TF's
functions take values, not reference-typed variables.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes as _dtypes
from dtf.framework.function_def import FuncRef, add_function
from dtf.framework.node_export import has_exporter
from dtf.framework.op_registry import get_op_def

_INT32 = _dtypes.int32


# -- small helpers over node dicts -------------------------------------------------------
class _Builder:
    """Node dicts made under one name prefix (unique: it is an exported node's name)."""

    def __init__(self, prefix, device="", ctx=None):
        self.prefix = prefix
        self.device = device
        self.nodes = []
        self.ctx = ctx  # set for nodes of the list being exported (their dtypes are looked up)

    def op(self, op_type, name, inputs, attrs, out_dtypes):
        full = f"{self.prefix}/{name}"
        self.nodes.append({"name": full, "op": op_type, "input": list(inputs), "device": self.device,
                           "attr": attrs, "output_dtypes": [_dtypes.as_dtype(t).name for t in out_dtypes]})
        if self.ctx is not None:
            _set_dtypes(self.ctx, full, out_dtypes)
        return [f"{full}:{k}" for k in range(len(out_dtypes))]

    def const(self, name, value, dtype):
        value = np.asarray(value, dtype=_dtypes.as_dtype(dtype).as_numpy_dtype)
        return self.op("Const", name, [], {"dtype": _dtypes.as_dtype(dtype), "value": value}, [dtype])[0]


def _split(tensor):
    op, _, idx = tensor.rpartition(":")
    return op, int(idx)


def _data_and_controls(d):
    data = [i for i in d["input"] if not i.startswith("^")]
    return data, [i for i in d["input"] if i.startswith("^")]


def _dtype_of(ctx, tensor):
    """The dtype of a tensor of the node list being exported (as exported)."""
    op, idx = _split(tensor)
    exported = ctx.memo.get("dtypes", {}).get(op)
    if exported is not None:
        return _dtypes.as_dtype(exported[idx])
    return _dtypes.as_dtype(ctx.nodes[op]["output_dtypes"][idx])


def _set_dtypes(ctx, name, dtypes):
    ctx.memo.setdefault("dtypes", {})[name] = [_dtypes.as_dtype(t).name for t in dtypes]


def _body_dtype(body, tensor):
    op, idx = _split(tensor)
    for d in body["nodes"]:
        if d["name"] == op:
            return _dtypes.as_dtype(d["output_dtypes"][idx])
    raise KeyError(tensor)


def _check_no_assign(owner, body, what):
    """A captured variable reaches TF's function as a value: a body that updates it (an
    op taking it at a reference input) has no TF equivalent."""
    refs = {a[0].rsplit(":", 1)[0] for a in body["args"] if a[3]}
    if not refs:
        return
    for d in body["nodes"]:
        if has_exporter(d["op"]):
            continue  # nested control flow: checked when its own bodies are exported
        ref_inputs = get_op_def(d["op"]).ref_inputs
        for pos, i in enumerate(i for i in d["input"] if not i.startswith("^")):
            if i.rsplit(":", 1)[0] in refs and pos in ref_inputs and not d["op"].startswith(
                    ("Identity", "_RefArg")):
                raise TypeError(
                    f"{owner['op']} '{owner['name']}': its {what} updates the captured variable "
                    f"{i!r} ({d['op']} '{d['name']}'): TF's functional control flow takes "
                    "variables by value, so a body that assigns to one cannot be exported")


def _record_needs(ctx):
    """forward op name -> the forward body tensors its gradient ops read, in order."""
    needs = ctx.memo.get("needs")
    if needs is not None:
        return needs
    needs = {}
    for d in ctx.nodes.values():
        if d["op"] == "If" and d["attr"].get("history_input", -1) >= 0:
            record = _data_and_controls(d)[0][1 + d["attr"]["history_input"]]
            bodies = [d["attr"]["then_branch"], d["attr"]["else_branch"]]
        elif d["op"] == "_WhileGrad":
            record, bodies = _data_and_controls(d)[0][0], [d["attr"]["body"]]
        else:
            continue
        names = needs.setdefault(_split(record)[0], [])
        for body in bodies:
            for _, source, key, _ in body["args"]:
                if source == "history" and key not in names:
                    names.append(key)
    ctx.memo["needs"] = needs
    return needs


def _placeholder_at(body, position_of):
    """{function input position: placeholder node name} of a body's args;
    ``position_of(source, key)`` gives an arg's position (None: not an input)."""
    out = {}
    for ph, source, key, _ in body["args"]:
        pos = position_of(source, key)
        if pos is not None:
            out.setdefault(pos, ph.rsplit(":", 1)[0])
    return out


def _function_args(owner, placeholders, dtypes, tag):
    """[(placeholder node or an unused name, dtype)] for every function input."""
    return [(placeholders.get(p, f"{owner}/{tag}_unused_{p}"), t) for p, t in enumerate(dtypes)]


def _arg_tensor(args, p):
    return f"{args[p][0]}:0"


def _check_history(owner, body, names):
    for name in names:
        try:
            dtype = _body_dtype(body, name)
        except KeyError:
            continue
        if dtype == _dtypes.control_flow_record:
            raise TypeError(f"{owner['op']} '{owner['name']}': the gradient of control flow "
                            "nested in a tf.cond or tf.while_loop body cannot be exported yet")


# -- If ----------------------------------------------------------------------------------
# A variable update in a branch, as the value it writes (the Assign follows the If).
_UPDATE_AS_VALUE = {"Assign": None, "AssignAdd": "Add", "AssignSub": "Sub"}


def _hoist_updates(owner, body, args):
    """A branch's updates of captured variables (batch norm's moving averages) as values:
    ``(nodes, {input position: new value tensor})``. TF's If takes variables by value, so
    the exported If outputs the new value and an Assign after it writes the variable."""
    position_of = {name: p for p, (name, _) in enumerate(args)}
    ref_args = {a[0].rsplit(":", 1)[0] for a in body["args"] if a[3]}
    nodes, assigned = [], {}
    for nd in body["nodes"]:
        data = [i for i in nd["input"] if not i.startswith("^")]
        target = data[0].rsplit(":", 1)[0] if data else None
        if nd["op"] in _UPDATE_AS_VALUE and target in ref_args:
            p = position_of[target]
            if p in assigned:
                raise TypeError(f"If '{owner['name']}': a branch updates the variable at input "
                                f"{p + 1} twice, which has no export as TF's functional If")
            value_op = _UPDATE_AS_VALUE[nd["op"]]
            t = nd["attr"]["T"]
            inputs = [data[1]] if value_op is None else data[:2]
            controls = [i for i in nd["input"] if i.startswith("^")]
            nodes.append({"name": nd["name"], "op": value_op or "Identity", "input": inputs + controls,
                          "device": "", "attr": {"T": t}, "output_dtypes": list(nd["output_dtypes"])})
            assigned[p] = f"{nd['name']}:0"
            continue
        nodes.append(nd)
    return nodes, assigned


def export_if(d, ctx):
    attrs = d["attr"]
    name = d["name"]
    data, controls = _data_and_controls(d)
    pred, ins = data[0], data[1:]
    hist = attrs.get("history_input", -1)
    needs = _record_needs(ctx).get(name, [])
    fwd_needs = []
    if hist >= 0:  # a gradient If: the record becomes the forward If's extra outputs
        fwd = _split(ins[hist])[0]
        fwd_needs = _record_needs(ctx)[fwd]
        fwd_node, offset = ctx.memo["if_outputs"][fwd]
        ins = ins[:hist] + [f"{fwd_node}:{offset + k}" for k in range(len(fwd_needs))] + ins[hist + 1:]

    def position(source, key):
        if source == "history":
            return hist + fwd_needs.index(key)
        if hist >= 0 and key > hist:
            return key - 1 + len(fwd_needs)
        return key

    tin = [_dtype_of(ctx, t) for t in ins]
    tout = [_dtypes.as_dtype(t) for t in attrs["Tout"]]
    branches = []
    for tag, key in (("then", "then_branch"), ("else", "else_branch")):
        body = attrs[key]
        _check_history(d, body, needs)
        args = _function_args(name, _placeholder_at(body, position), tin, tag)
        nodes, assigned = _hoist_updates(d, body, args)
        _check_no_assign(d, dict(body, nodes=nodes), f"{tag} branch")
        branches.append((tag, body, args, nodes, assigned))
    positions = sorted({p for *_, assigned in branches for p in assigned})
    # the gradient's values: each from the branch that computed it
    need_dtypes = []
    for hname in needs:
        owner = next(b for b in branches if _split(hname)[0] in {n["name"] for n in b[1]["nodes"]})
        need_dtypes.append(_body_dtype(owner[1], hname))
    funcs = {}
    for tag, body, args, nodes, assigned in branches:
        b = _Builder(f"{name}/{tag}_export")
        outputs = list(body["outputs"])
        outputs += [assigned.get(p, _arg_tensor(args, p)) for p in positions]
        own = {n["name"] for n in nodes}
        for k, hname in enumerate(needs):  # the other branch's values: a zero of their type
            outputs.append(hname if _split(hname)[0] in own else b.const(f"zero_{k}", 0, need_dtypes[k]))
        funcs[tag] = add_function(ctx.library, f"{name}_{tag}", nodes + b.nodes, args, outputs,
                                  body.get("targets", ()))
    assigned_dtypes = [tin[p] for p in positions]
    out_dtypes = tout + assigned_dtypes + need_dtypes
    shapes = list(attrs["output_shapes"]) + [None] * (len(out_dtypes) - len(tout))
    new_attrs = {"Tcond": _dtypes.bool, "Tin": tin, "Tout": out_dtypes,
                 "then_branch": FuncRef(funcs["then"]), "else_branch": FuncRef(funcs["else"]),
                 "output_shapes": shapes}
    if "_class" in attrs:
        new_attrs["_class"] = attrs["_class"]
    if_name = f"{name}/if" if positions else name
    node = dict(d, name=if_name, input=[pred] + ins + controls, attr=new_attrs,
                output_dtypes=[t.name for t in out_dtypes])
    _set_dtypes(ctx, if_name, out_dtypes)
    ctx.memo.setdefault("if_outputs", {})[name] = (if_name, len(tout) + len(positions))
    if not positions:
        return [node]
    # The variables' writes, then the op's own name over its outputs once they are done:
    # what depends on the op (UPDATE_OPS, a train op's control inputs) sees the updates.
    post = _Builder(name, d.get("device", ""), ctx)
    writes = [post.op("Assign", f"export_assign_{k}", [ins[p], f"{if_name}:{len(tout) + k}"],
                      {"T": tin[p], "use_locking": True, "validate_shape": True}, [tin[p]])[0]
              for k, p in enumerate(positions)]
    after = [f"^{_split(w)[0]}" for w in writes]
    if tout:
        result = {"name": name, "op": "IdentityN", "input": [f"{if_name}:{j}" for j in range(len(tout))]
                  + after, "device": d.get("device", ""), "attr": {"T": tout},
                  "output_dtypes": [t.name for t in tout]}
    else:
        result = {"name": name, "op": "NoOp", "input": after, "device": d.get("device", ""),
                  "attr": {}, "output_dtypes": []}
    _set_dtypes(ctx, name, tout)
    return [node] + post.nodes + [result]


# -- While -------------------------------------------------------------------------------
def export_while(d, ctx):
    attrs = d["attr"]
    data, controls = _data_and_controls(d)
    n = attrs["n_vars"]
    needs = _record_needs(ctx).get(d["name"], [])
    body, cond = attrs["body"], attrs["cond"]
    for what, fn in (("body", body), ("cond", cond)):
        _check_no_assign(d, fn, what)
    _check_history(d, body, needs)
    dtypes = [_dtype_of(ctx, t) for t in data]
    pre = _Builder(f"{d['name']}/export", d.get("device", ""), ctx)
    extra_in, extra_dtypes = [], []
    if needs:
        extra_in.append(pre.const("counter", 0, _INT32))
        extra_dtypes.append(_INT32)
        for k, name in enumerate(needs):
            dt = _body_dtype(body, name)
            extra_in += [pre.const(f"values_{k}", np.zeros([0]), dt),
                         pre.const(f"shapes_{k}", np.zeros([0]), _INT32)]
            extra_dtypes += [dt, _INT32]
    all_dtypes = dtypes + extra_dtypes
    by_input = (lambda source, key: key)
    cond_args = _function_args(d["name"], _placeholder_at(cond, by_input), all_dtypes, "cond")
    body_args = _function_args(d["name"], _placeholder_at(body, by_input), all_dtypes, "body")
    m = len(data)
    outputs = list(body["outputs"]) + [_arg_tensor(body_args, p) for p in range(n, m)]
    nodes = list(body["nodes"])
    if needs:
        b = _Builder(f"{d['name']}/body_export")
        one = b.const("one", 1, _INT32)
        flat_shape = b.const("flat", [-1], _INT32)
        axis = b.const("axis", 0, _INT32)
        outputs.append(b.op("Add", "counter", [_arg_tensor(body_args, m), one], {"T": _INT32},
                            [_INT32])[0])
        for k, name in enumerate(needs):
            dt = _body_dtype(body, name)
            values, shapes = _arg_tensor(body_args, m + 1 + 2 * k), _arg_tensor(body_args, m + 2 + 2 * k)
            flat = b.op("Reshape", f"flat_{k}", [name, flat_shape], {"T": dt, "Tshape": _INT32}, [dt])[0]
            outputs.append(b.op("ConcatV2", f"values_{k}", [values, flat, axis],
                                {"N": 2, "T": dt, "Tidx": _INT32}, [dt])[0])
            shape = b.op("Shape", f"shape_{k}", [name], {"T": dt, "out_type": _INT32}, [_INT32])[0]
            rank = b.op("Size", f"rank_{k}", [shape], {"T": _INT32, "out_type": _INT32}, [_INT32])[0]
            rank1 = b.op("Reshape", f"rank1_{k}", [rank, b.const(f"one_dim_{k}", [1], _INT32)],
                         {"T": _INT32, "Tshape": _INT32}, [_INT32])[0]
            outputs.append(b.op("ConcatV2", f"shapes_{k}", [shapes, shape, rank1, axis],
                                {"N": 3, "T": _INT32, "Tidx": _INT32}, [_INT32])[0])
        nodes += b.nodes
    name = d["name"]
    cond_fn = add_function(ctx.library, f"{name}_cond", cond["nodes"], cond_args, cond["outputs"],
                           cond.get("targets", ()))
    body_fn = add_function(ctx.library, f"{name}_body", nodes, body_args, outputs,
                           body.get("targets", ()))
    shapes = list(attrs["output_shapes"]) + [None] * (len(all_dtypes) - n)
    new_attrs = {"T": all_dtypes, "cond": FuncRef(cond_fn), "body": FuncRef(body_fn),
                 "output_shapes": shapes, "parallel_iterations": 10}
    if "_class" in attrs:
        new_attrs["_class"] = attrs["_class"]
    _set_dtypes(ctx, name, all_dtypes)
    ctx.memo.setdefault("while_layout", {})[name] = (n, m, needs)
    return pre.nodes + [dict(d, input=data + extra_in + controls, attr=new_attrs,
                             output_dtypes=[t.name for t in all_dtypes])]


def export_while_grad(d, ctx):
    """The gradient loop: counts the forward iterations down, popping each one's values."""
    attrs = d["attr"]
    data, controls = _data_and_controls(d)
    fwd = _split(data[0])[0]
    n, m, needs = ctx.memo["while_layout"][fwd]
    fwd_inputs = _data_and_controls(ctx.nodes[fwd])[0]
    nf = attrs["n_grads"]
    grads_in, outer = data[1:1 + nf], data[1 + nf:]
    body = attrs["body"]
    _check_no_assign(d, body, "body")
    name = d["name"]
    device = d.get("device", "")
    tout = [_dtypes.as_dtype(t) for t in attrs["Tout"]]
    nc = len(tout) - nf
    pre = _Builder(f"{name}/export", device, ctx)
    sums = [pre.op("ZerosLike", f"zeros_{c}", [fwd_inputs[k]], {"T": tout[nf + c]}, [tout[nf + c]])[0]
            for c, k in enumerate(attrs["cap_inputs"])]
    counter = f"{fwd}:{m}"
    accs = []
    for k, hname in enumerate(needs):
        values, shapes = f"{fwd}:{m + 1 + 2 * k}", f"{fwd}:{m + 2 + 2 * k}"
        dt = _dtype_of(ctx, values)
        off = pre.op("Size", f"values_size_{k}", [values], {"T": dt, "out_type": _INT32}, [_INT32])[0]
        soff = pre.op("Size", f"shapes_size_{k}", [shapes], {"T": _INT32, "out_type": _INT32}, [_INT32])[0]
        accs += [values, shapes, off, soff]
    loop_in = list(grads_in) + list(outer) + sums + [counter] + accs
    dtypes = [_dtype_of(ctx, t) if t not in sums else tout[nf + sums.index(t)] for t in loop_in]
    q = len(outer)
    i_pos = nf + q + nc

    cb = _Builder(f"{name}/cond_export")
    cond_args = [(f"{name}/cond_arg_{p}", t) for p, t in enumerate(dtypes)]
    pred = cb.op("Greater", "more", [f"{cond_args[i_pos][0]}:0", cb.const("zero", 0, _INT32)],
                 {"T": _INT32}, [_dtypes.bool])[0]

    placeholders = _placeholder_at(body, lambda source, key: None if source == "history" else key)
    args = _function_args(name, placeholders, dtypes, "body")
    b = _Builder(f"{name}/body_export")
    one = b.const("one", 1, _INT32)
    one_dim, scalar = b.const("one_dim", [1], _INT32), b.const("scalar", np.zeros([0]), _INT32)
    axis = b.const("axis", 0, _INT32)
    i_next = b.op("Sub", "counter", [_arg_tensor(args, i_pos), one], {"T": _INT32}, [_INT32])[0]
    popped, acc_out = {}, []
    for k, hname in enumerate(needs):
        base = i_pos + 1 + 4 * k
        values, shapes, off, soff = (_arg_tensor(args, base + j) for j in range(4))
        dt = _body_dtype_of_record(ctx, fwd, hname)
        r = b.op("Sub", f"rank_at_{k}", [soff, one], {"T": _INT32}, [_INT32])[0]
        rank_vec = b.op("Slice", f"rank_{k}", [shapes, _vec(b, f"rank_begin_{k}", r, one_dim), one_dim],
                        {"T": _INT32, "Index": _INT32}, [_INT32])[0]
        rank = b.op("Reshape", f"rank_scalar_{k}", [rank_vec, scalar], {"T": _INT32, "Tshape": _INT32},
                    [_INT32])[0]
        soff_next = b.op("Sub", f"shapes_offset_{k}", [r, rank], {"T": _INT32}, [_INT32])[0]
        shape = b.op("Slice", f"shape_{k}", [shapes, _vec(b, f"shape_begin_{k}", soff_next, one_dim),
                                             rank_vec], {"T": _INT32, "Index": _INT32}, [_INT32])[0]
        size = b.op("Prod", f"size_{k}", [shape, axis], {"T": _INT32, "Tidx": _INT32, "keep_dims": False},
                    [_INT32])[0]
        off_next = b.op("Sub", f"values_offset_{k}", [off, size], {"T": _INT32}, [_INT32])[0]
        flat = b.op("Slice", f"flat_{k}", [values, _vec(b, f"values_begin_{k}", off_next, one_dim),
                                           _vec(b, f"values_size_{k}", size, one_dim)],
                    {"T": dt, "Index": _INT32}, [dt])[0]
        popped[hname] = b.op("Reshape", f"value_{k}", [flat, shape], {"T": dt, "Tshape": _INT32}, [dt])[0]
        acc_out += [values, shapes, off_next, soff_next]
    nodes = []
    for nd in body["nodes"]:
        nodes.append(nd)
    for ph, source, key, _ in body["args"]:  # a recorded value: the popped one
        if source == "history":
            ph_node = ph.rsplit(":", 1)[0]
            dt = _body_dtype(body, ph)
            nodes = [({"name": ph_node, "op": "Identity", "input": [popped[key]], "device": "",
                       "attr": {"T": dt}, "output_dtypes": [dt.name]} if nd["name"] == ph_node else nd)
                     for nd in nodes]
    outs = body["outputs"]
    new_sums = [b.op("Add", f"sum_{c}", [_arg_tensor(args, nf + q + c), outs[nf + c]],
                     {"T": tout[nf + c]}, [tout[nf + c]])[0] for c in range(nc)]
    outputs = (list(outs[:nf]) + [_arg_tensor(args, nf + p) for p in range(q)] + new_sums
               + [i_next] + acc_out)
    cond_fn = add_function(ctx.library, f"{name}_cond", cb.nodes, cond_args, [pred])
    body_fn = add_function(ctx.library, f"{name}_body", nodes + b.nodes, args, outputs,
                           body.get("targets", ()))
    loop = f"{name}/loop"
    loop_node = {"name": loop, "op": "While", "input": loop_in + controls, "device": device,
                 "attr": {"T": dtypes, "cond": FuncRef(cond_fn), "body": FuncRef(body_fn),
                          "output_shapes": [None] * len(dtypes), "parallel_iterations": 10},
                 "output_dtypes": [t.name for t in dtypes]}
    if "_class" in attrs:
        loop_node["attr"]["_class"] = attrs["_class"]
    # The op's own name gives dtf's outputs in dtf's order (users fetch them by name).
    picked = [f"{loop}:{j}" for j in range(nf)] + [f"{loop}:{nf + q + c}" for c in range(nc)]
    result = {"name": name, "op": "IdentityN", "input": picked, "device": device,
              "attr": {"T": tout}, "output_dtypes": [t.name for t in tout]}
    _set_dtypes(ctx, name, tout)
    return pre.nodes + [loop_node, result]


def _vec(b, name, scalar, one_dim):
    return b.op("Reshape", name, [scalar, one_dim], {"T": _INT32, "Tshape": _INT32}, [_INT32])[0]


def _body_dtype_of_record(ctx, fwd, hname):
    return _body_dtype(ctx.nodes[fwd]["attr"]["body"], hname)


__all__ = []
