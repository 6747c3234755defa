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

A gradient op in a gradient body reads a nested op's record through a history argument:
one scan over the graph and all its bodies (``_scan``) says what every forward op must
output, and a nested op's record stands for what it outputs for its own gradient (an If's
values right after its outputs, a While's captures, counter and accumulators), which the op
around it outputs or accumulates like any other value.

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
    exported = ctx.memo.get("dtypes", {}).get(op) or ctx.library.memo.get("part_dtypes", {}).get(op)
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
                    f"its {what} updates the captured variable "
                    f"{i!r} ({d['op']} '{d['name']}'): TF's functional control flow takes "
                    "variables by value, so a body that assigns to one cannot be exported")


def _record_consumer(d):
    """(record input, gradient bodies) of a node reading a forward op's run record."""
    a = d["attr"]
    if d["op"] == "If" and a.get("history_input", -1) >= 0:
        return _data_and_controls(d)[0][1 + a["history_input"]], [a["then_branch"], a["else_branch"]]
    if d["op"] == "_WhileGrad":
        return _data_and_controls(d)[0][0], [a["body"]]
    return None, ()


def _scan(nodes, history_source, memo):
    """Every node of a graph and its bodies, and what each forward op must output for its
    gradient (``needs``: forward body tensors, in order). A gradient op in a gradient body
    reads its forward op's record through a history argument: ``history_source`` maps
    such an argument's node to the forward op."""
    for d in nodes:
        memo["nodes"][d["name"]] = d
        record, bodies = _record_consumer(d)
        if record is not None:
            fwd = _split(record)[0]
            names = memo["needs"].setdefault(history_source.get(fwd, fwd), [])
            for body in bodies:
                for _, source, key, _ in body["args"]:
                    if source == "history" and key not in names:
                        names.append(key)
        for value in d["attr"].values():
            if isinstance(value, dict) and "nodes" in value:
                sub = {ph.rsplit(":", 1)[0]: _split(key)[0] for ph, source, key, _ in value["args"]
                       if source == "history"}
                _scan(value["nodes"], sub, memo)


def _memo(ctx):
    memo = ctx.library.memo
    if "needs" not in memo:
        memo.update(needs={}, nodes={}, record_parts={})
        _scan(list(ctx.nodes.values()), {}, memo)
    return memo


def _parts(memo, name):
    """[(tensor, dtype)] standing for a forward body tensor a gradient reads: itself, or
    for the run record of a control-flow op nested in the body, the values that op outputs
    for its own gradient (an If's come right after its outputs, where the record was)."""
    op, idx = _split(name)
    d = memo["nodes"][op]
    dtype = _dtypes.as_dtype(d["output_dtypes"][idx])
    if dtype != _dtypes.control_flow_record:
        return [(name, dtype)]
    if d["op"] == "While":
        types = _while_record_dtypes(memo, d)
    elif d["op"] == "If":
        types = [t for _, t in _need_parts(memo, op)]
    else:
        raise TypeError(f"the gradient reads the run record of {d['op']} '{op}', which "
                        "has no exported form")
    return [(f"{op}:{idx + j}", t) for j, t in enumerate(types)]


def _while_record_dtypes(memo, d):
    """What stands for a While's record, its outputs from the record's index on: the
    captures it passes through, its iteration counter, then each value's accumulators."""
    data = _data_and_controls(d)[0]
    out = [_memo_dtype(memo, t) for t in data[d["attr"]["n_vars"]:]] + [_INT32]
    for _, t in _need_parts(memo, d["name"]):
        out += [t, _INT32]
    return out


def _memo_dtype(memo, tensor):
    op, idx = _split(tensor)
    exported = memo.get("part_dtypes", {}).get(op)
    if exported is not None:
        return _dtypes.as_dtype(exported[idx])
    return _dtypes.as_dtype(memo["nodes"][op]["output_dtypes"][idx])


def _is_record(memo, name):
    op, idx = _split(name)
    return _dtypes.as_dtype(memo["nodes"][op]["output_dtypes"][idx]) == _dtypes.control_flow_record


def _need_parts(memo, op):
    """[(tensor, dtype)] a forward op outputs for its gradient, flattened."""
    return [p for name in memo["needs"].get(op, []) for p in _parts(memo, name)]


def _history_layout(memo, fwd):
    """{history key: (first part, number of parts)} of forward op ``fwd``'s needs."""
    layout, off = {}, 0
    for name in memo["needs"].get(fwd, []):
        count = len(_parts(memo, name))
        layout[name] = (off, count)
        off += count
    return layout, off


def _split_history_args(memo, body, layout, base, placeholders, nodes):
    """Places a gradient body's history arguments at ``base`` + their part positions; an
    argument holding a nested op's record becomes one argument per part (the nested
    gradient op reads them through ``memo["record_parts"]``). Returns the nodes left."""
    drop = set()
    for ph, source, key, _ in body["args"]:
        if source != "history":
            continue
        start, count = layout[key]
        node = ph.rsplit(":", 1)[0]
        if not _is_record(memo, key):
            placeholders[base + start] = node
            continue
        names = [f"{node}/part_{j}" for j in range(count)]
        for j, (part, (_, dtype)) in enumerate(zip(names, _parts(memo, key))):
            placeholders[base + start + j] = part
            memo.setdefault("part_dtypes", {})[part] = [dtype.name]
        memo["record_parts"][node] = ([f"{part}:0" for part in names], _split(key)[0])
        drop.add(node)
    return [nd for nd in nodes if nd["name"] not in drop]


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
                raise TypeError(f"a branch updates the variable at input "
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


def _record_inputs(memo, record, n_out_of):
    """(forward op, the tensors standing for its record here) of a gradient op's record
    input: the forward op's outputs after its own, or the parts a history argument was
    split into (a gradient op in a gradient body)."""
    rec_op = _split(record)[0]
    if rec_op in memo["record_parts"]:
        parts, fwd = memo["record_parts"][rec_op]
        return fwd, parts
    fwd = rec_op
    n = n_out_of(memo["nodes"][fwd])
    return fwd, [f"{fwd}:{n + k}" for k in range(len(_need_parts(memo, fwd)))]


def export_if(d, ctx):
    memo = _memo(ctx)
    attrs = d["attr"]
    name = d["name"]
    data, controls = _data_and_controls(d)
    pred, ins = data[0], data[1:]
    hist = attrs.get("history_input", -1)
    layout = {}
    if hist >= 0:  # a gradient If: the record becomes the forward If's extra outputs
        fwd, parts = _record_inputs(memo, ins[hist], lambda f: len(f["attr"]["Tout"]))
        layout, _ = _history_layout(memo, fwd)
        ins = ins[:hist] + parts + ins[hist + 1:]
        n_parts = len(parts)

    def position(source, key):
        if source == "history":
            return None
        if hist >= 0 and key > hist:
            return key - 1 + n_parts
        return key

    tin = [_dtype_of(ctx, t) for t in ins]
    tout = [_dtypes.as_dtype(t) for t in attrs["Tout"]]
    branches = []
    for tag, key in (("then", "then_branch"), ("else", "else_branch")):
        body = attrs[key]
        placeholders = _placeholder_at(body, position)
        nodes = list(body["nodes"])
        if hist >= 0:
            nodes = _split_history_args(memo, body, layout, hist, placeholders, nodes)
        args = _function_args(name, placeholders, tin, tag)
        nodes, assigned = _hoist_updates(d, dict(body, nodes=nodes), args)
        _check_no_assign(d, dict(body, nodes=nodes), f"{tag} branch")
        branches.append((tag, body, args, nodes, assigned))
    positions = sorted({p for *_, assigned in branches for p in assigned})
    needed = _need_parts(memo, name)  # each from the branch that computed it
    funcs = {}
    for tag, body, args, nodes, assigned in branches:
        b = _Builder(f"{name}/{tag}_export")
        outputs = list(body["outputs"])
        own = {n["name"] for n in nodes}
        for k, (tensor, dtype) in enumerate(needed):  # the other branch's: a zero of its type
            outputs.append(tensor if _split(tensor)[0] in own else b.const(f"zero_{k}", 0, dtype))
        outputs += [assigned.get(p, _arg_tensor(args, p)) for p in positions]
        funcs[tag] = add_function(ctx.library, f"{name}_{tag}", nodes + b.nodes, args, outputs,
                                  body.get("targets", ()))
    kept = tout + [t for _, t in needed]  # the op's outputs as its gradient reads them
    out_dtypes = kept + [tin[p] for p in positions]
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
    if not positions:
        return [node]
    # The variables' writes, then the op's own name over its outputs once they are done:
    # what depends on the op (UPDATE_OPS, a train op's control inputs) sees the updates.
    post = _Builder(name, d.get("device", ""), ctx)
    writes = [post.op("Assign", f"export_assign_{k}", [ins[p], f"{if_name}:{len(kept) + k}"],
                      {"T": tin[p], "use_locking": True, "validate_shape": True}, [tin[p]])[0]
              for k, p in enumerate(positions)]
    after = [f"^{_split(w)[0]}" for w in writes]
    if kept:
        result = {"name": name, "op": "IdentityN", "input": [f"{if_name}:{j}" for j in range(len(kept))]
                  + after, "device": d.get("device", ""), "attr": {"T": kept},
                  "output_dtypes": [t.name for t in kept]}
    else:
        result = {"name": name, "op": "NoOp", "input": after, "device": d.get("device", ""),
                  "attr": {}, "output_dtypes": []}
    _set_dtypes(ctx, name, kept)
    return [node] + post.nodes + [result]


# -- While -------------------------------------------------------------------------------
def export_while(d, ctx):
    memo = _memo(ctx)
    attrs = d["attr"]
    data, controls = _data_and_controls(d)
    n = attrs["n_vars"]
    needs = _need_parts(memo, d["name"])  # [(body tensor, dtype)] the gradient pops
    body, cond = attrs["body"], attrs["cond"]
    for what, fn in (("body", body), ("cond", cond)):
        _check_no_assign(d, fn, what)
    dtypes = [_dtype_of(ctx, t) for t in data]
    pre = _Builder(f"{d['name']}/export", d.get("device", ""), ctx)
    extra_in, extra_dtypes = [], []
    if needs:
        extra_in.append(pre.const("counter", 0, _INT32))
        extra_dtypes.append(_INT32)
        for k, (_, dt) in enumerate(needs):
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
        for k, (name, dt) in enumerate(needs):
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
    return pre.nodes + [dict(d, input=data + extra_in + controls, attr=new_attrs,
                             output_dtypes=[t.name for t in all_dtypes])]


def export_while_grad(d, ctx):
    """The gradient loop: counts the forward iterations down, popping each one's values."""
    attrs = d["attr"]
    data, controls = _data_and_controls(d)
    memo = _memo(ctx)
    rec_op = _split(data[0])[0]
    if rec_op in memo["record_parts"]:  # a loop nested in a body: its record's parts
        parts, fwd = memo["record_parts"][rec_op]
    else:
        fwd = rec_op
        n_fwd = memo["nodes"][fwd]["attr"]["n_vars"]
        parts = [f"{fwd}:{n_fwd + j}" for j in range(len(_while_record_dtypes(memo, memo["nodes"][fwd])))]
    fwd_node = memo["nodes"][fwd]
    n_fwd = fwd_node["attr"]["n_vars"]
    n_caps = len(_data_and_controls(fwd_node)[0]) - n_fwd
    captured, counter, stacks = parts[:n_caps], parts[n_caps], parts[n_caps + 1:]
    needs = _need_parts(memo, fwd)
    layout, _ = _history_layout(memo, fwd)
    nf = attrs["n_grads"]
    grads_in, outer = data[1:1 + nf], data[1 + nf:]
    body = attrs["body"]
    _check_no_assign(d, body, "body")
    name = d["name"]
    device = d.get("device", "")
    tout = [_dtypes.as_dtype(t) for t in attrs["Tout"]]
    nc = len(tout) - nf
    pre = _Builder(f"{name}/export", device, ctx)
    sums = [pre.op("ZerosLike", f"zeros_{c}", [captured[k - n_fwd]], {"T": tout[nf + c]}, [tout[nf + c]])[0]
            for c, k in enumerate(attrs["cap_inputs"])]
    accs = []
    for k, (_, dt) in enumerate(needs):
        values, shapes = stacks[2 * k], stacks[2 * k + 1]
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
    popped, acc_out = [], []
    for k, (_, dt) in enumerate(needs):
        base = i_pos + 1 + 4 * k
        values, shapes, off, soff = (_arg_tensor(args, base + j) for j in range(4))
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
        popped.append(b.op("Reshape", f"value_{k}", [flat, shape], {"T": dt, "Tshape": _INT32}, [dt])[0])
        memo.setdefault("part_dtypes", {})[_split(popped[-1])[0]] = [dt.name]
        acc_out += [values, shapes, off_next, soff_next]
    replaced, drop = {}, set()
    for ph, source, key, _ in body["args"]:  # a recorded value: the popped one
        if source != "history":
            continue
        ph_node = ph.rsplit(":", 1)[0]
        start, count = layout[key]
        if _is_record(memo, key):  # a nested op's record: its gradient op reads the parts
            memo["record_parts"][ph_node] = (popped[start:start + count], _split(key)[0])
            drop.add(ph_node)
            continue
        dt = _body_dtype(body, ph)
        replaced[ph_node] = {"name": ph_node, "op": "Identity", "input": [popped[start]],
                             "device": "", "attr": {"T": dt}, "output_dtypes": [dt.name]}
    nodes = [replaced.get(nd["name"], nd) for nd in body["nodes"] if nd["name"] not in drop]
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


__all__ = []
