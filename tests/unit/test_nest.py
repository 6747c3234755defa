"""dtf.framework.nest: one flatten/pack for control flow (lists nest) and tf.data (lists are
values)."""
import collections

import pytest

from dtf.framework.nest import Nest

Pair = collections.namedtuple("Pair", "a b")
CONTROL, DATA = Nest((list, tuple, dict)), Nest((tuple, dict))


def test_dicts_flatten_in_sorted_key_order_and_keep_their_order_when_packed():
    s = {"b": 1, "a": (2, Pair(3, [4, 5]))}
    assert CONTROL.flatten(s) == [2, 3, 4, 5, 1]
    assert DATA.flatten(s) == [2, 3, [4, 5], 1]
    packed = CONTROL.pack_sequence_as(s, [20, 30, 40, 50, 10])
    assert list(packed) == ["b", "a"] and packed["a"][1] == Pair(30, [40, 50])
    assert DATA.map_structure(str, s) == {"b": "1", "a": ("2", Pair("3", "[4, 5]"))}


def test_structures_compare_by_nesting_not_leaves():
    assert CONTROL.same_structure([1, {"k": 2}], [3, {"k": 4}])
    assert not CONTROL.same_structure([1, 2], [1])
    assert not CONTROL.same_structure({"k": 1}, {"j": 1})
    assert DATA.same_structure([1, 2], [1])  # lists are single values to tf.data
    with pytest.raises(ValueError, match="flat_sequence had 3"):
        CONTROL.pack_sequence_as((1, 2), [1, 2, 3])
