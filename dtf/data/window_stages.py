"""Dataset.window's running stages: ``window`` turns the input into windows, each element
a tuple with one WindowPart (the window's values of one component) per component;
``window_part`` is the nested dataset a flat_map/interleave function builds on one part
(its ``w`` tensor is the function's argument, fed the WindowPart)."""
from __future__ import annotations

import collections

from dtf.framework import errors
from .pipeline import stage


class WindowPart(list):
    """One component's values in one window (what a dataset_window tensor holds)."""


def _invalid(msg):
    return errors.InvalidArgumentError(None, None, msg)


@stage("window")
class Window:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.size, self.shift, self.stride = (b.scalar(spec, k) for k in ("size", "shift", "stride"))
        for name in ("size", "shift", "stride"):
            if getattr(self, name) <= 0:
                raise _invalid(f"Window {name} must be greater than zero, but got "
                               f"{getattr(self, name)}.")
        self.drop = spec["drop_remainder"]

    def __iter__(self):
        # TF's WindowDataset: a window starts every `shift` elements and takes `size`
        # elements `stride` apart; windows keep starting until the input is used up.
        size, shift, stride = self.size, self.shift, self.stride
        span = (size - 1) * stride + 1
        source = iter(self.input)
        buf = collections.deque()
        base = 0  # absolute index of buf[0] (or of the next element when buf is empty)
        start, exhausted = 0, False
        while True:
            while not exhausted and base + len(buf) < start + span:
                el = next(source, None)
                if el is None:
                    exhausted = True
                elif base + len(buf) < start:
                    base += 1  # between windows (shift > span): never in one
                else:
                    buf.append(el)
            end = min(start + span, base + len(buf))
            if start >= end:
                return
            rows = [buf[i - base] for i in range(start, end, stride)]
            if len(rows) < size and self.drop:
                return
            yield tuple(WindowPart(el[i] for el in rows) for i in range(len(rows[0])))
            start += shift
            while buf and base < start:
                buf.popleft()
                base += 1


@stage("window_part")
class WindowPartStage:
    def __init__(self, spec, b):
        self.part = b.value(spec, "w")
        if not isinstance(self.part, WindowPart):
            raise _invalid(f"a window's nested dataset was given {type(self.part).__name__}, "
                           "not a window")

    def __iter__(self):
        for value in self.part:
            yield (value,)
