"""Nested element structures of tf.data: tuples, namedtuples and dicts of components.

A dataset element is a structure whose leaves are tensors at graph-building time and numpy
arrays at run time. Datasets pass elements between stages as flat lists (dicts in sorted
key order, as TF's ``nest`` does) and rebuild the structure only at the Python surface.
Lists are values, not structures (TF1's tf.data rule).
"""
from __future__ import annotations

from dtf.framework.nest import Nest

_NEST = Nest((tuple, dict))
is_sequence = _NEST.is_sequence
flatten = _NEST.flatten
pack_sequence_as = _NEST.pack_sequence_as
map_structure = _NEST.map_structure


def assert_same_structure(a, b, what="structures"):
    if not _NEST.same_structure(a, b):
        raise TypeError(f"The two {what} do not have the same nested structure: {a!r} vs {b!r}")
