"""The units a dataflow run schedules (dtf.runtime.dataflow_units), on random step graphs:
receives and kernels that may block are units of their own, every other step is in one
block, and running the units in any order their edges allow runs each step after all of
its inputs."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dtf.runtime.dataflow_units import dataflow_units


@st.composite
def step_graphs(draw):
    """(n, consumers, pending, recv_keys, may_block) of a random DAG in topological order."""
    n = draw(st.integers(1, 30))
    preds = [sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else [] for i in range(n)]
    kinds = draw(st.lists(st.sampled_from(["step", "step", "recv", "block"]), min_size=n, max_size=n))
    consumers = [[] for _ in range(n)]
    for i, ps in enumerate(preds):
        for j in ps:
            consumers[j].append(i)
    pending = [len(ps) for ps in preds]
    recv_keys = [f"key{i}" if k == "recv" else None for i, k in enumerate(kinds)]
    may_block = [k == "block" for k in kinds]
    return n, preds, consumers, pending, recv_keys, may_block


def _run_in_some_order(units, unit_consumers, unit_pending, rng):
    """The steps in the order a dataflow run could take, picking any ready unit each time."""
    pending = list(unit_pending)
    ready = [u for u, p in enumerate(pending) if p == 0]
    order, done = [], 0
    while ready:
        u = ready.pop(rng.randrange(len(ready)))
        order.extend(units[u])
        done += 1
        for c in unit_consumers[u]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    assert done == len(units), "some units never became ready: the unit graph has a cycle"
    return order


@settings(max_examples=300, deadline=None)
@given(step_graphs(), st.integers(0, 2**32 - 1))
def test_units_cover_every_step_once_and_keep_its_inputs_before_it(graph, seed):
    n, preds, consumers, pending, recv_keys, may_block = graph
    units, unit_keys, unit_consumers, unit_pending = dataflow_units(
        list(range(n)), recv_keys, consumers, pending, may_block=may_block)
    assert sorted(s for u in units for s in u) == list(range(n))
    for u, steps in enumerate(units):
        lone = [s for s in steps if recv_keys[s] is not None or may_block[s]]
        if lone:  # a receive or a kernel that may block is never part of a block
            assert steps == (lone[0],) and unit_keys[u] == recv_keys[lone[0]]
        else:
            assert unit_keys[u] is None
    order = _run_in_some_order(units, unit_consumers, unit_pending, random.Random(seed))
    position = {s: k for k, s in enumerate(order)}
    for i, ps in enumerate(preds):
        for j in ps:
            assert position[j] < position[i], f"step {i} ran before its input {j}"


@pytest.mark.parametrize("may_block", [None, [False] * 4])
def test_without_blocking_kernels_the_steps_that_wait_for_nothing_form_one_block(may_block):
    # 0 -> 1, 2 (a receive) -> 3: steps 0 and 1 wait for no receive, step 3 for step 2's.
    consumers, pending = [[1], [], [3], []], [0, 1, 0, 1]
    units, keys, _, _ = dataflow_units(list(range(4)), [None, None, "k", None], consumers, pending,
                                       may_block=may_block)
    assert units == [(0, 1), (2,), (3,)] and keys == [None, "k", None]
