"""The units a partition that receives tensors runs as: each receive alone, and the other
steps in blocks of those that wait for the same receives, each block run in plan order.

Why: the dataflow loop (executor._DataflowRun) pays for every unit it schedules: a pop, a
look-up of its receive key, a pending count per consumer (about 1 us a step here, against
0.1 us for a call in a plain loop). A word2vec worker partition has ~140 steps but only
7 receives; what lets a step run is which of them have arrived, so the steps that
(transitively) wait for the same set of receives become runnable at the same moment and
can run as one block in topological order. The order among steps that are ready together
is free (the loop ran them in stack order), and nothing runs earlier or later relative to
the receives than before.

A kernel that may block (WouldBlock: queues, accumulators, readers) is a unit of its own
too, and the steps after it wait for it as they wait for a receive: it is retried alone
once its resource changes, which a block could not resume mid-way. Before, a plan with one
such kernel ran every step as a unit of its own: a synchronous-training ps then scheduled
~90 units per global step where ~40 do (the accumulators' handles, reads and sends of its
three partitions run as blocks).
"""
from __future__ import annotations


def dataflow_units(steps, recv_keys, consumers, pending, may_block=None):
    """(units, unit_recv_keys, unit_consumers, unit_pending) from the per-step dataflow
    graph (``consumers``, ``pending`` of executor._dataflow_graph): ``units[u]`` is a tuple
    of Steps run in that order; ``unit_recv_keys[u]`` the key of a receive unit, else None.
    ``may_block[i]``: step i's kernel may raise WouldBlock (a unit of its own)."""
    n = len(steps)
    alone = [k is not None or bool(may_block and may_block[i]) for i, k in enumerate(recv_keys)]
    preds = [[] for _ in range(n)]
    for j, cs in enumerate(consumers):
        for c in cs:
            preds[c].append(j)
    # The receives and blocking kernels each step waits for, through any path: the steps
    # sharing a set form a block. Steps are in topological order (the sequential run relies
    # on it too).
    waits_for = [frozenset()] * n
    unit_of = [0] * n
    units, unit_keys, block_of_set = [], [], {}
    for i in range(n):
        s = frozenset()
        for j in preds[i]:
            s = s | waits_for[j]
            if alone[j]:
                s = s | {j}
        waits_for[i] = s
        if alone[i]:
            unit_of[i] = len(units)
            units.append([steps[i]])
            unit_keys.append(recv_keys[i])
            continue
        u = block_of_set.get(s)
        if u is None:
            u = block_of_set[s] = len(units)
            units.append([])
            unit_keys.append(None)
        unit_of[i] = u
        units[u].append(steps[i])
    # Edges between units: from a lone unit to the units that wait for it, from a block
    # to one waiting for strictly more lone units or to a lone unit that waits for at least
    # as many, so the unit graph has no cycle.
    unit_consumers = [set() for _ in units]
    for j, cs in enumerate(consumers):
        uj = unit_of[j]
        for c in cs:
            if unit_of[c] != uj:
                unit_consumers[uj].add(unit_of[c])
    unit_pending = [0] * len(units)
    for cs in unit_consumers:
        for c in cs:
            unit_pending[c] += 1
    return ([tuple(u) for u in units], unit_keys, [sorted(cs) for cs in unit_consumers],
            unit_pending)
