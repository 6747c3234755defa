"""Whether an update may write a variable's arrays where they are.

A variable's value is replaced on assignment so that whoever holds the previous array (a
fetch, a send in flight, a value read earlier in the step) keeps a snapshot. An update
whose arrays nobody but their variables refers to can write them in place instead, as
TensorFlow's kernels always do, and save a stream over memory per array (see
docs/benchmarks.md, "Adam in place"). Used by ApplyAdam (.adam_fast) and
ApplyGradientDescent (.state).
"""
from __future__ import annotations

import sys

import numpy as np


def _refcounts(arrays) -> list:
    return [sys.getrefcount(a) for a in arrays]


class _Holder:
    __slots__ = ("value",)


def _own_references() -> int:
    """What _refcounts says of an array held only as a variable holds it (an attribute)
    and by one local name of the update, as the updates hold theirs: measured, not
    assumed, since the count differs between Python versions."""
    holder = _Holder()
    holder.value = np.empty(1)
    value = holder.value
    return _refcounts((value,))[0]


OWN_REFERENCES = _own_references()


def unshared(arrays) -> bool:
    """Whether each array (each read from its variable into one local name of the caller)
    is referred to by nothing else, owns its memory (no view of a received frame or of
    another array) and may be written."""
    if any(n != OWN_REFERENCES for n in _refcounts(arrays)):
        return False
    return all(a.flags.owndata and a.flags.writeable and a.flags.c_contiguous for a in arrays)
