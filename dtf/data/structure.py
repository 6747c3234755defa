"""Nested element structures of tf.data: tuples, namedtuples and dicts of components.

A dataset element is a structure whose leaves are tensors at graph-building time and numpy
arrays at run time. Datasets pass elements between stages as flat lists (dicts in sorted
key order, as TF's ``nest`` does) and rebuild the structure only at the Python surface.
"""
from __future__ import annotations


def is_sequence(x) -> bool:
    """Tuples (namedtuples too) and dicts nest; lists are values (TF1's tf.data rule)."""
    return isinstance(x, (tuple, dict))


def flatten(structure) -> list:
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_sequence_as(structure, flat):
    """Rebuilds ``structure``'s nesting around the leaves ``flat``."""
    flat = list(flat)
    packed, used = _pack(structure, flat, 0)
    if used != len(flat):
        raise ValueError(f"Structure had {used} elements, but flat_sequence had {len(flat)} elements.")
    return packed


def _pack(structure, flat, pos):
    if isinstance(structure, dict):
        out = {}
        for k in sorted(structure):
            out[k], pos = _pack(structure[k], flat, pos)
        return type(structure)((k, out[k]) for k in structure) if type(structure) is not dict \
            else {k: out[k] for k in structure}, pos
    if isinstance(structure, tuple):
        items = []
        for item in structure:
            value, pos = _pack(item, flat, pos)
            items.append(value)
        if hasattr(structure, "_fields"):  # namedtuple
            return type(structure)(*items), pos
        return tuple(items), pos
    if pos >= len(flat):
        raise ValueError("flat_sequence has fewer elements than the structure")
    return flat[pos], pos + 1


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure)])


def assert_same_structure(a, b, what="structures"):
    def shape(s):
        if isinstance(s, dict):
            return ("dict", tuple((k, shape(s[k])) for k in sorted(s)))
        if isinstance(s, tuple):
            return ("tuple", tuple(shape(x) for x in s))
        return "leaf"
    if shape(a) != shape(b):
        raise TypeError(f"The two {what} do not have the same nested structure: {a!r} vs {b!r}")
