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


def _own_reference_to_one() -> int:
    """What unshared_one's count says of an array held as _own_references describes
    (_count_as_unshared_one counts at the same call depth)."""
    holder = _Holder()
    holder.value = np.empty(1)
    value = holder.value
    return _count_as_unshared_one(value)


def _count_as_unshared_one(a) -> int:
    return sys.getrefcount(a)


OWN_REFERENCE_TO_ONE = _own_reference_to_one()


def unshared(arrays) -> bool:
    """Whether each array (each read from its variable into one local name of the caller)
    is referred to by nothing else, owns its memory (no view of a received frame or of
    another array) and may be written."""
    if any(n != OWN_REFERENCES for n in _refcounts(arrays)):
        return False
    return all(a.flags.owndata and a.flags.writeable and a.flags.c_contiguous for a in arrays)


def unshared_one(a) -> bool:
    """``unshared((a,))`` for one array, without the tuple and generators (a gradient-
    descent update, four per global step of a small model's ps, spent a microsecond here)."""
    if sys.getrefcount(a) != OWN_REFERENCE_TO_ONE:
        return False
    flags = a.flags
    return flags.owndata and flags.writeable and flags.c_contiguous
