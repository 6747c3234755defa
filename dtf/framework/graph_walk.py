"""Pruning: the nodes a (fetches, feeds, targets) signature needs, in topological order.
Shared by the executor (one device) and the master (whole graph, before placement)."""
from __future__ import annotations

from dtf.framework import errors


def split_tensor_name(tensor_name: str):
    op, _, idx = tensor_name.rpartition(":")
    return op, int(idx)


def needed_nodes(lookup, fetches, feeds, targets) -> list:
    """Post-order DFS from fetches and targets that stops at fed tensors. ``lookup(name)``
    returns a NodeDef or raises KeyError. Iterative, so deep graphs do not hit Python's
    recursion limit."""
    fed = set(feeds)
    needed: dict = {}
    order: list = []
    roots = [split_tensor_name(f)[0] for f in fetches if f not in fed] + list(targets)
    visiting = set()
    for root in roots:
        if root in needed:
            continue
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                visiting.discard(name)
                if name not in needed:
                    needed[name] = node = lookup(name)
                    order.append(node)
                continue
            if name in needed:
                continue
            if name in visiting:
                raise errors.InvalidArgumentError(None, None, f"Graph has a cycle through node {name}")
            try:
                node = lookup(name)
            except KeyError:
                raise errors.InvalidArgumentError(
                    None, None, f"Node {name!r} is not in the graph (or not on this device)") from None
            visiting.add(name)
            stack.append((name, True))
            for c in reversed(node.control_inputs):
                if c not in needed:
                    stack.append((c, False))
            for inp in reversed(node.inputs):
                if inp in fed:
                    continue
                src = split_tensor_name(inp)[0]
                if src not in needed:
                    stack.append((src, False))
    return order
