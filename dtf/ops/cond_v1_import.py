"""TF1's dataflow conds (control flow v1) in an imported GraphDef, rebuilt as dtf's If.

TF 1.x graph mode writes ``tf.cond`` as dataflow: a ``Switch(data, pred)`` per tensor the
branches read (output 0 for the false branch, 1 for the true one), the branch ops, and a
``Merge`` per cond output taking one value from each side (output 1, ``value_index``, says
which input arrived). Pivots ``switch_t``/``switch_f`` (Identities of ``Switch(pred, pred)``)
give the branch's constants a control input, and a cond nested in a branch switches its
tensors through the outer cond's Switches first. dtf runs conds as one If op with a body
graph per branch, so the import finds the regions and rebuilds them:

1. ``analyse`` gives every node a *context*: the chain of (cond, side) it runs in. A Switch
   output adds (cond, output index) to its input's context, a Merge drops the last entry,
   any other node runs in the deepest context of its inputs (control inputs included, so a
   constant under a pivot is in the branch). A cond is first known by its Switches' pred
   tensor; two keys meeting in one node or Merge at the same depth are one cond (the pivot
   Switch reads the raw predicate, the data Switches its ``pred_id`` Identity).
2. ``import_level`` creates one level's nodes in dependency order, each cond of that level
   as a unit: ``tf.cond`` whose branch functions create the nodes of their side (a level one
   deeper, so nested conds recurse), reading a Switch's output as the Switch's data input
   (captured from the graph around). Each Merge becomes an ``IdentityN`` of the same name over
   (the If's output, value_index), so its tensors keep their names.

TF1 while loops (Enter/Exit frames) get the same treatment, a frame being one more kind of
context; dtf/ops/while_v1_import.py builds them. The one shape left to the old path
(importer._EXPANSIONS) is ``initialized_value()``'s cond:
a RefSwitch of a variable, which an If would read before it runs.
"""
from __future__ import annotations

from dtf.framework import ops as _ops
from dtf.framework.importer import dependency_order, split_input as _split

_SWITCHES = ("Switch", "RefSwitch")


class _Keys:
    """Union-find over cond keys (see the module doc: one cond may show two keys)."""

    def __init__(self):
        self.parent = {}

    def find(self, k):
        while self.parent.get(k, k) != k:
            k = self.parent[k]
        return k

    def union(self, a, b):
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[b] = a


class Analysis:
    """Contexts of a GraphDef's nodes (``ctx``: name -> tuple of (key, side)), the key of
    each cond Switch and Merge, and the union-find relating keys."""

    def __init__(self, nodes):
        self.nodes = {n.name: n for n in nodes}
        self.keys = _Keys()
        self.ctx = {}
        self.switch_key = {}   # cond Switch name -> key
        self.merge_key = {}    # cond Merge name -> key
        self.merge_sides = {}  # cond Merge name -> side of each input
        self.enter_key = {}    # TF1 loop Enter name -> ("frame", frame name)
        self.exits = set()     # TF1 loop Exit names
        self.loop_merges = {}  # TF1 loop Merge name -> (Enter name, NextIteration name)

    def out_ctx(self, ref):
        src, idx = _split(ref)
        base = self.ctx.get(src, ())
        if idx is not None:
            if src in self.switch_key:
                return base + ((self.switch_key[src], idx),)
            if src in self.enter_key:
                return base + ((self.enter_key[src], "loop"),)
            if src in self.exits:
                return base[:-1]
        return base

    def norm(self, ctx):
        return tuple((self.keys.find(k), s) for k, s in ctx)

    def key(self, k):
        return self.keys.find(k)


def _join(an, node, ctxs):
    """The deepest of ``ctxs``, the others being its prefixes (keys meeting at one depth are
    one cond); two sides of one cond meeting is an error naming the node."""
    deepest = max(ctxs, key=len, default=())
    for c in ctxs:
        for (k1, s1), (k2, s2) in zip(c, deepest):
            if s1 != s2:
                raise ValueError(f"import_graph_def: node {node.name!r} ({node.op}) reads both "
                                 "branches of a TF1 cond without a Merge; dtf cannot rebuild it")
            an.keys.union(k1, k2)
    return deepest


def _initialized_value_preds(nodes):
    """The pred tensors of initialized_value()'s conds (an Identity of, or the output of,
    IsVariableInitialized): their Switches stay ordinary nodes for the old path."""
    preds = set()
    for n in nodes.values():
        if n.op not in _SWITCHES or len(n.input) < 2:
            continue
        src = nodes.get(_split(n.input[1])[0])
        while src is not None and src.op == "Identity" and src.input:
            src = nodes.get(_split(src.input[0])[0])
        if src is not None and src.op == "IsVariableInitialized":
            preds.add(n.input[1])
    return preds


def _loop_merge(an, node):
    """Records ``node`` as a TF1 loop's Merge (of an Enter and a NextIteration) and gives it
    the frame's context; False for any other Merge."""
    srcs = [an.nodes.get(_split(i)[0]) for i in node.input if not i.startswith("^")]
    ops = sorted(getattr(s, "op", "") for s in srcs)
    if "NextIteration" not in ops and "Enter" not in ops:
        return False
    if ops != ["Enter", "NextIteration"]:
        raise ValueError(f"import_graph_def: node {node.name!r} (Merge) of a TF1 while loop does "
                         "not join one Enter and one NextIteration; dtf cannot rebuild it")
    enter = next(s.name for s in srcs if s.op == "Enter")
    nxt = next(s.name for s in srcs if s.op == "NextIteration")
    an.ctx[node.name] = an.out_ctx(enter + ":0")
    an.loop_merges[node.name] = (enter, nxt)
    return True


def _is_loop_switch(an, node):
    pred = an.nodes.get(_split(node.input[1])[0])
    return pred is not None and pred.op == "LoopCond"


def analyse(nodes_in_order):
    """The Analysis of a GraphDef's nodes (in dependency order), or None when it has no
    TF1 cond to rebuild."""
    an = Analysis(nodes_in_order)
    legacy = _initialized_value_preds(an.nodes)
    if not any(n.op in _SWITCHES and len(n.input) > 1 and n.input[1] not in legacy
               or n.op == "Enter" for n in nodes_in_order):
        return None
    for node in nodes_in_order:
        ins = [i for i in node.input if _split(i)[0] in an.nodes]
        ctxs = [an.out_ctx(i) for i in ins]
        if node.op == "Merge" and _loop_merge(an, node):
            continue
        if node.op == "Merge":
            if ctxs and all(an.norm(c) == an.norm(ctxs[0]) for c in ctxs):
                an.ctx[node.name] = ctxs[0]  # not a cond's Merge: the old path judges it
                continue
            data = [an.out_ctx(i) for i in node.input if not i.startswith("^")]
            if len(data) != 2 or not all(data) or len(data[0]) != len(data[1]) \
                    or data[0][-1][1] == data[1][-1][1]:
                raise ValueError(f"import_graph_def: node {node.name!r} (Merge) does not join the "
                                 "two branches of one TF1 cond; dtf cannot rebuild it")
            an.keys.union(data[0][-1][0], data[1][-1][0])
            prefix = _join(an, node, [d[:-1] for d in data])
            an.ctx[node.name] = prefix
            an.merge_key[node.name] = data[0][-1][0]
            an.merge_sides[node.name] = [d[-1][1] for d in data]
            continue
        an.ctx[node.name] = _join(an, node, ctxs)
        if node.op == "Enter":
            frame = node.attr["frame_name"].s.decode() if "frame_name" in node.attr else ""
            an.enter_key[node.name] = ("frame", frame)
        elif node.op == "Exit":
            if not an.ctx[node.name] or an.ctx[node.name][-1][1] != "loop":
                raise ValueError(f"import_graph_def: node {node.name!r} (Exit) is not in a TF1 "
                                 "while loop's frame")
            an.exits.add(node.name)
        elif node.op in _SWITCHES and len(node.input) > 1 and _is_loop_switch(an, node):
            pass  # a loop's Switch on its LoopCond: an ordinary node of the frame
        elif node.op in _SWITCHES and len(node.input) > 1 and node.input[1] not in legacy:
            # the pivot Switch(pred, pred) gets a key of its own, joined to its cond's
            # pred_id key where their branches meet
            pivot = node.input[0] == node.input[1]
            an.switch_key[node.name] = ("pivot", node.name) if pivot else ("pred", node.input[1])
    return an


# -- building ---------------------------------------------------------------------------
class Level:
    """The nodes (``names``) of one level: the outer graph (depth 0), or one branch of a
    cond or a loop's cond or body one deeper than the level holding it."""

    def __init__(self, an, depth, names):
        self.an, self.depth, self.names = an, depth, names

    def units(self):
        """[(unit, member names)] in dependency order; a unit is a node name, or
        ("region", key) for a cond of this level (its Switches, Merges and everything in its
        branches) or a while loop (key ("frame", name): its Enters and all of its frame)."""
        an, d = self.an, self.depth
        unit_of = {}
        for name in self.names:
            c = an.norm(an.ctx[name])
            if len(c) > d:
                unit_of[name] = ("region", c[d][0])
            elif name in an.switch_key:
                unit_of[name] = ("region", an.key(an.switch_key[name]))
            elif name in an.merge_key:
                unit_of[name] = ("region", an.key(an.merge_key[name]))
            elif name in an.enter_key:
                unit_of[name] = ("region", an.enter_key[name])
            else:
                unit_of[name] = name
        members = {}
        for name in self.names:
            members.setdefault(unit_of[name], []).append(name)

        class _Unit:
            def __init__(self, unit):
                self.input = [i for m in members[unit] for i in an.nodes[m].input
                              if unit_of.get(_split(i)[0], unit) != unit]

        by_unit = {u: _Unit(u) for u in members}

        def cycle(u):
            what = f"node {u!r}" if isinstance(u, str) else \
                f"the TF1 cond or loop of node {members[u][0]!r}"
            return ValueError(f"import_graph_def: the GraphDef has a cycle through {what}")

        order = dependency_order(by_unit, lambda i: unit_of.get(_split(i)[0]), cycle)
        # dependency_order hands back the _Unit objects: map them back to their units
        back = {id(v): u for u, v in by_unit.items()}
        return [(back[id(o)], members[back[id(o)]]) for o in order]


def build_cond(an, depth, members, resolve, create):
    """Creates the If of one cond of level ``depth`` (``members``: its node names, in
    dependency order) and returns {Merge name: IdentityN op}. ``resolve(ref)`` reads this
    level's tensors, ``create(node, inputs, controls)`` creates a NodeDef's op in the
    default graph (a branch's body while the branch is built)."""
    from dtf.ops import array_ops
    from dtf.ops.control_flow_cond import cond
    from dtf.ops.custom_gradient import identity_n

    switches = [m for m in members if m in an.switch_key and len(an.ctx[m]) == depth]
    merges = [m for m in members if m in an.merge_key and len(an.ctx[m]) == depth]
    if not merges and all(an.switch_key[s][0] == "pivot" for s in switches):
        # a pivot no branch op hangs on (branches reading only switched tensors): the
        # pivot and its Identities compute nothing anyone reads
        return {}
    if not merges:
        raise ValueError(f"import_graph_def: the TF1 cond of Switch {switches[0]!r} has no "
                         "Merge; dtf cannot rebuild it")
    data_switches = [s for s in switches if an.switch_key[s][0] == "pred"] or switches
    pred = resolve(an.nodes[data_switches[0]].input[1])

    def branch(side):
        def fn():
            inside = [m for m in members if len(an.ctx[m]) > depth
                      and an.norm(an.ctx[m])[depth][1] == side]
            created = {}

            def resolve_here(ref):
                src, idx = _split(ref)
                if src in created:
                    op = created[src]
                    if idx is None:
                        return op
                    if idx >= len(op.outputs):
                        raise ValueError(f"input {ref!r}: {src!r} has only "
                                         f"{len(op.outputs)} outputs")
                    return op.outputs[idx]
                if src in switches:
                    if idx is None:
                        return None  # ordering on the Switch: the If runs after its inputs
                    if idx != side:
                        raise ValueError(f"input {ref!r} is read in the other branch of "
                                         "its TF1 cond")
                    return resolve(an.nodes[src].input[0])
                return resolve(ref)

            level = Level(an, depth + 1, inside)
            import_level(level, resolve_here, created, create)
            outs = []
            for m in merges:
                k = an.merge_sides[m].index(side)
                data = [i for i in an.nodes[m].input if not i.startswith("^")]
                outs.append(array_ops.identity(resolve_here(data[k])))
                outs.append(_ops.convert_to_tensor(k, name="value_index"))
            return outs
        return fn

    first = merges[0]
    outputs = cond(pred, branch(1), branch(0), strict=True, name=f"{first}_cond")
    result = {}
    for j, m in enumerate(merges):
        node = an.nodes[m]
        controls = [resolve(i) for i in node.input if i.startswith("^")]
        with _ops.control_dependencies([c for c in controls if c is not None]):
            op = identity_n([outputs[2 * j], outputs[2 * j + 1]], name=m)[0].op
        if node.device:
            op._set_device(node.device)
        result[m] = op
    return result


def import_level(level, resolve, created, create_node):
    """Creates ``level``'s nodes into ``created`` (name -> op), conds as If ops.
    ``create_node(node, inputs, controls)`` creates an ordinary node's op."""
    an = level.an
    for unit, members in level.units():
        if isinstance(unit, tuple):
            if unit[1][0] == "frame":
                from .while_v1_import import build_loop

                created.update(build_loop(an, level.depth, members, resolve, create_node))
            else:
                created.update(build_cond(an, level.depth, members, resolve, create_node))
            continue
        node = an.nodes[unit]
        created[unit] = create_node(node, *node_inputs(node, resolve))


def node_inputs(node, resolve):
    """(inputs, control ops) of a NodeDef; ``resolve(ref)`` gives a tensor, or for ``^name``
    an op, a list of ops, or None (nothing to wait for)."""
    inputs, controls = [], []
    for ref in node.input:
        try:
            t = resolve(ref)
        except ValueError as e:
            raise ValueError(f"import_graph_def: node {node.name!r}: {e}") from None
        if ref.startswith("^"):
            if t is not None:
                controls.extend(t if isinstance(t, list) else [t])
        else:
            inputs.append(t)
    return inputs, controls
