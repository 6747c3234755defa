"""TF1's dataflow while loops (control flow v1) in an imported GraphDef, rebuilt as dtf's
While (forward only).

TF 1.x writes ``tf.while_loop`` as a frame: per loop variable ``Enter`` (into the frame)
-> ``Merge(Enter, NextIteration)`` -> ``Switch(Merge, LoopCond)``, whose output 0 leaves
through ``Exit`` and output 1 (through an Identity) feeds the body; the body's result goes
to ``NextIteration``, back into the Merge. The condition reads the Merges and ends in
``LoopCond``. Tensors from outside enter with ``Enter(is_constant=True)``. cond_v1_import
gives every node of the frame the frame in its context and hands the whole frame here as
one unit; ``build_loop`` calls ``tf.while_loop`` whose cond and body functions create the
nodes the LoopCond and the NextIterations need (one level deeper, so conds and loops in
the body nest), reading a Merge or a Switch's output 1 as the loop variable and a constant
Enter as its outer tensor (captured). Each Exit becomes an Identity of the same name.
"""
from __future__ import annotations

from dtf.framework import ops as _ops
from .cond_v1_import import Level, _split, import_level

_BOUNDARY = ("Merge", "Switch", "RefSwitch", "Enter", "NextIteration", "Exit", "LoopCond")


def build_loop(an, depth, members, resolve, create):
    """Creates the While of one TF1 loop frame of level ``depth`` (``members``: its node
    names in dependency order); returns {Exit name: Identity op}."""
    from dtf.ops import array_ops
    from dtf.ops.control_flow_while import while_loop

    member_set = set(members)
    # the frame's own Merges and Enters (a loop nested in the body has its own, one deeper)
    merges = [m for m in members if m in an.loop_merges and len(an.ctx[m]) == depth + 1]
    if not merges:
        raise ValueError(f"import_graph_def: the TF1 loop frame of Enter {members[0]!r} has no "
                         "Merge; dtf cannot rebuild it")
    var_of = {m: i for i, m in enumerate(merges)}
    switch_of, loop_cond = {}, None
    for name in members:
        node = an.nodes[name]
        if node.op in ("Switch", "RefSwitch") and _split(node.input[0])[0] in var_of:
            pred = an.nodes.get(_split(node.input[1])[0])
            if pred is None or pred.op != "LoopCond":
                continue
            if loop_cond not in (None, pred.name):
                raise ValueError(f"import_graph_def: TF1 loop Switch {name!r} reads a second "
                                 f"LoopCond {pred.name!r}; dtf cannot rebuild it")
            loop_cond = pred.name
            switch_of[name] = var_of[_split(node.input[0])[0]]
    if loop_cond is None:
        raise ValueError(f"import_graph_def: the TF1 loop of Merge {merges[0]!r} has no "
                         "LoopCond; dtf cannot rebuild it")
    enters = {m for m in members if m in an.enter_key and len(an.ctx[m]) == depth}
    initial = [resolve(an.nodes[an.loop_merges[m][0]].input[0]) for m in merges]

    def ancestors(refs):
        """Frame nodes the ``refs`` need, in dependency order (stopping at the loop's own
        Merges, Switches, Enters and LoopCond, which the functions read differently)."""
        need, stack = set(), [_split(r)[0] for r in refs]
        while stack:
            name = stack.pop()
            if name in need or name not in member_set or name in var_of or name in switch_of \
                    or name in enters or name == loop_cond:
                continue
            need.add(name)
            stack.extend(_split(i)[0] for i in an.nodes[name].input)
        return [m for m in members if m in need]

    def function(refs, single):
        def fn(*loop_vars):
            created = {}

            def resolve_here(ref):
                src, idx = _split(ref)
                if src in created:
                    op = created[src]
                    return op if idx is None else op.outputs[idx]
                if src in var_of or src in switch_of or src in enters or src == loop_cond:
                    if idx is None:
                        return None  # ordering inside the frame: the While's iteration
                    if src in var_of and idx == 0:
                        return loop_vars[var_of[src]]
                    if src in switch_of and idx == 1:
                        return loop_vars[switch_of[src]]
                    if src in enters:
                        return resolve(an.nodes[src].input[0])
                    raise ValueError(f"input {ref!r} of a TF1 while loop is read where dtf "
                                     "cannot rebuild it")
                return resolve(ref)

            import_level(Level(an, depth + 1, ancestors(refs)), resolve_here, created, create)
            outs = [array_ops.identity(resolve_here(r)) for r in refs]
            return outs[0] if single else outs
        return fn

    cond_refs = [an.nodes[loop_cond].input[0]]
    body_refs = [an.nodes[an.loop_merges[m][1]].input[0] for m in merges]
    outputs = while_loop(function(cond_refs, True), function(body_refs, False), initial,
                         name=f"{merges[0]}_while")
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    result = {}
    for name in members:
        node = an.nodes[name]
        if node.op == "Exit" and _split(node.input[0])[0] in switch_of:
            op = array_ops.identity(outputs[switch_of[_split(node.input[0])[0]]], name=name).op
            if node.device:
                op._set_device(node.device)
            result[name] = op
    return result


__all__ = ["build_loop"]
