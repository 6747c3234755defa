"""Nested structures of values, as TF's ``nest``: dicts (flattened in sorted key order),
tuples and namedtuples, and, where a caller says so, lists. Control flow (``tf.cond``,
``tf.while_loop``, ``map_fn``) nests lists too; tf.data treats a list as one value, as
TF1's tf.data does. So each caller holds a :class:`Nest` of the sequence types it nests."""
from __future__ import annotations


def is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


class Nest:
    def __init__(self, sequence_types: tuple):
        self.sequence_types = tuple(t for t in sequence_types if t is not dict)

    def is_sequence(self, x) -> bool:
        return isinstance(x, dict) or isinstance(x, self.sequence_types)

    def flatten(self, structure) -> list:
        if isinstance(structure, dict):
            return [leaf for k in sorted(structure) for leaf in self.flatten(structure[k])]
        if isinstance(structure, self.sequence_types):
            return [leaf for item in structure for leaf in self.flatten(item)]
        return [structure]

    def pack_sequence_as(self, structure, flat):
        """Rebuilds ``structure``'s nesting around the leaves ``flat``."""
        flat = list(flat)
        packed, used = self._pack(structure, flat, 0)
        if used != len(flat):
            raise ValueError(f"Structure had {used} elements, but flat_sequence had "
                             f"{len(flat)} elements.")
        return packed

    def _pack(self, structure, flat, pos):
        if isinstance(structure, dict):
            out = {}
            for k in sorted(structure):
                out[k], pos = self._pack(structure[k], flat, pos)
            if type(structure) is dict:
                return {k: out[k] for k in structure}, pos
            return type(structure)((k, out[k]) for k in structure), pos
        if isinstance(structure, self.sequence_types):
            items = []
            for item in structure:
                value, pos = self._pack(item, flat, pos)
                items.append(value)
            if is_namedtuple(structure):
                return type(structure)(*items), pos
            return type(structure)(items), pos
        if pos >= len(flat):
            raise ValueError("flat_sequence has fewer elements than the structure")
        return flat[pos], pos + 1

    def map_structure(self, fn, structure):
        return self.pack_sequence_as(structure, [fn(x) for x in self.flatten(structure)])

    def same_structure(self, a, b) -> bool:
        """Same nesting (dict keys, sequence lengths); leaves may differ."""
        if isinstance(a, dict) or isinstance(b, dict):
            return (isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
                    and all(self.same_structure(a[k], b[k]) for k in a))
        if self.is_sequence(a) or self.is_sequence(b):
            return (self.is_sequence(a) and self.is_sequence(b) and len(a) == len(b)
                    and all(self.same_structure(x, y) for x, y in zip(a, b)))
        return True
