"""The running pipeline: what an iterator's initializer builds from a dataset spec.

Each kind of stage is a class registered in ``STAGES`` under the spec's ``kind``; it is
built from its spec and a Builder (the captured tensors' values, the inputs' stages,
compiled functions), and iterating it yields elements as tuples of numpy arrays (one per
flat component). Iterating again starts over, which is what ``repeat`` does.
"""
from __future__ import annotations

import collections
import queue
import threading

import numpy as np

from dtf.framework import errors
from dtf.state.resources import as_array
from .function import Function, compile_plan

STAGES: dict = {}


def stage(kind):
    def deco(cls):
        if kind in STAGES:
            raise KeyError(f"dataset stage {kind!r} registered twice")
        STAGES[kind] = cls
        return cls
    return deco


class Builder:
    """Builds stages of one spec tree from the values of its captured tensors."""

    def __init__(self, values, env, plans=None):
        self.values = list(values)
        self.env = env
        self.plans = {} if plans is None else plans  # function plans, reused across builds

    def build(self, spec):
        try:
            cls = STAGES[spec["kind"]]
        except KeyError:
            raise errors.InvalidArgumentError(
                None, None, f"unknown dataset stage {spec['kind']!r}; known: {sorted(STAGES)}") from None
        return cls(spec, self)

    def input(self, spec, i=0):
        return self.build(spec["inputs"][i])

    def value(self, spec, name):
        return self.values[spec["tensors"][name]]

    def scalar(self, spec, name) -> int:
        return int(self.value(spec, name))

    def function(self, spec, name="f") -> Function:
        fn_spec = spec["functions"][name]
        cached = self.plans.get(id(fn_spec))
        if cached is None or cached[0] is not fn_spec:
            cached = self.plans[id(fn_spec)] = (fn_spec, compile_plan(fn_spec))
        return Function(fn_spec, self.values, cached[1])

    def inner(self, spec, values):
        """The dataset a flat_map/interleave function returned, from its outputs."""
        return Builder(values, self.env, self.plans).build(spec["inner"])


def _invalid(msg):
    return errors.InvalidArgumentError(None, None, msg)


# -- sources ----------------------------------------------------------------------------
@stage("tensors")
class Tensors:
    def __init__(self, spec, b):
        self.element = tuple(b.value(spec, f"c{i}") for i in range(spec["n"]))

    def __iter__(self):
        yield self.element


@stage("tensor_slices")
class TensorSlices:
    def __init__(self, spec, b):
        self.components = [np.asarray(b.value(spec, f"c{i}")) for i in range(spec["n"])]
        sizes = {c.shape[0] if c.ndim else None for c in self.components}
        if None in sizes:
            raise _invalid("from_tensor_slices: every component needs at least one dimension")
        if len(sizes) != 1:
            raise _invalid(f"from_tensor_slices: dimension 0 of the components differ: "
                           f"{[list(c.shape) for c in self.components]}")
        self.n = sizes.pop()

    def __iter__(self):
        comps = self.components
        for i in range(self.n):
            yield tuple(c[i] for c in comps)


@stage("range")
class Range:
    def __init__(self, spec, b):
        self.args = (b.scalar(spec, "start"), b.scalar(spec, "stop"), b.scalar(spec, "step"))
        if self.args[2] == 0:
            raise _invalid("step must be a non-zero integer.")

    def __iter__(self):
        for i in range(*self.args):
            yield (np.asarray(i, dtype=np.int64),)


@stage("generator")
class Generator:
    def __init__(self, spec, b):
        from . import generators

        self.fn = generators.lookup(spec["key"])
        self.types = spec["types"]
        self.shapes = spec["shapes"]

    def __iter__(self):
        from . import structure as nest

        n = len(self.types)
        for value in self.fn():
            flat = [value] if n == 1 else nest.flatten(value)
            if len(flat) != n:
                raise _invalid(f"from_generator: the generator yielded {len(flat)} components, "
                               f"expected {n}")
            out = []
            for i, (v, dt, shape) in enumerate(zip(flat, self.types, self.shapes)):
                try:
                    arr = as_array(v, dt)
                except (TypeError, ValueError) as e:
                    raise _invalid(f"from_generator: component {i} ({v!r}) is not a {dt.name}: {e}") from None
                if shape is not None and (arr.ndim != len(shape) or any(
                        w is not None and w != g for w, g in zip(shape, arr.shape))):
                    raise _invalid(f"`generator` yielded an element of shape {list(arr.shape)} "
                                   f"where an element of shape {shape} was expected.")
                out.append(arr)
            yield tuple(out)


@stage("zip")
class Zip:
    def __init__(self, spec, b):
        self.inputs = [b.input(spec, i) for i in range(len(spec["inputs"]))]

    def __iter__(self):
        for parts in zip(*self.inputs):
            yield tuple(c for part in parts for c in part)


@stage("concatenate")
class Concatenate:
    def __init__(self, spec, b):
        self.first, self.second = b.input(spec, 0), b.input(spec, 1)

    def __iter__(self):
        yield from self.first
        yield from self.second


# -- per-element functions --------------------------------------------------------------
@stage("map")
class Map:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.fn = b.function(spec)
        self.env = b.env
        self.parallel = int(spec.get("parallel", 1))

    def __iter__(self):
        fn, env = self.fn, self.env
        if self.parallel > 1:
            yield from self._maybe_parallel()
            return
        for el in self.input:
            yield tuple(fn(env, el))

    def _maybe_parallel(self):
        """num_parallel_calls > 1: the first elements are mapped in line and timed; threads
        take over only when an element takes long enough (_PARALLEL_MIN_S) for the GIL the
        kernels release to outweigh the hand-offs. A small map (parsing one 28x28 Example,
        about 30 us) ran 0.8x as fast on two threads as in line, being mostly executor
        Python that holds the GIL."""
        import itertools
        import time

        fn, env = self.fn, self.env
        source = iter(self.input)
        took = 0.0
        for el in itertools.islice(source, _PROBE_ELEMENTS):
            t0 = time.perf_counter()
            out = tuple(fn(env, el))
            took += time.perf_counter() - t0
            yield out
        if took < _PROBE_ELEMENTS * _PARALLEL_MIN_S:
            for el in source:
                yield tuple(fn(env, el))
            return
        yield from self._parallel(source)

    def _parallel(self, source):
        """num_parallel_calls: up to ``parallel`` runs of consecutive elements are mapped at
        once on a pool of threads (each with its own step context), and come out in input
        order, as TF 1.x gives them; an error comes out at its element's place. Threads help
        where the kernels a map runs (numpy, Numba, decoding) release the GIL. Handing one
        element to a thread costs tens of microseconds of wake-ups under the GIL, more than a
        small map (parsing one 28x28 Example) takes: one element per hand-off made w8's
        TFRecord pipeline 3x slower than mapping in line. So each hand-off carries a run of
        elements sized to take about ``_RUN_S`` of mapping, measured as it goes."""
        import time
        from concurrent.futures import ThreadPoolExecutor

        from dtf.runtime.executor import ignore_float_errors_on_this_thread

        fn, env, n = self.fn, self.env, self.parallel

        def map_run(run):
            t0 = time.perf_counter()
            out = []
            for el in run:
                try:
                    out.append(tuple(fn(env, el)))
                except Exception as e:  # noqa: BLE001 (re-raised at its element's place)
                    return out, e, time.perf_counter() - t0
            return out, None, time.perf_counter() - t0

        pending = collections.deque()
        pool = ThreadPoolExecutor(n, thread_name_prefix="dtf-map",
                                  initializer=ignore_float_errors_on_this_thread)
        run_len, run = 1, []

        def drain_one():
            nonlocal run_len
            out, error, took = pending.popleft().result()
            if error is None and out:
                per_element = took / len(out)
                run_len = max(1, min(_RUN_MAX, int(_RUN_S / max(per_element, 1e-7))))
            return out, error

        try:
            for el in source:
                run.append(el)
                if len(run) < run_len:
                    continue
                pending.append(pool.submit(map_run, run))
                run = []
                if len(pending) >= n:
                    out, error = drain_one()
                    yield from out
                    if error is not None:
                        raise error
            if run:
                pending.append(pool.submit(map_run, run))
            while pending:
                out, error = drain_one()
                yield from out
                if error is not None:
                    raise error
        finally:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=True)


# A parallel map times its first _PROBE_ELEMENTS elements in line, and maps the rest on
# threads only when one took _PARALLEL_MIN_S or more on average.
_PROBE_ELEMENTS = 8
_PARALLEL_MIN_S = 0.0005
# A parallel map hands its threads runs of elements that take about this long to map
# (at most _RUN_MAX elements), so the hand-off costs little beside the work.
_RUN_S = 0.002
_RUN_MAX = 256


@stage("filter")
class Filter(Map):
    def __iter__(self):
        fn, env = self.fn, self.env
        for el in self.input:
            if fn(env, el)[0]:
                yield el


@stage("flat_map")
class FlatMap:
    def __init__(self, spec, b):
        self.spec, self.b = spec, b
        self.input = b.input(spec)
        self.fn = b.function(spec)

    def __iter__(self):
        for el in self.input:
            yield from self.b.inner(self.spec, self.fn(self.b.env, el))


@stage("interleave")
class Interleave(FlatMap):
    def __init__(self, spec, b):
        super().__init__(spec, b)
        self.cycle = b.scalar(spec, "cycle_length")
        if self.cycle == -1:
            import os

            self.cycle = os.cpu_count() or 1
        self.block = b.scalar(spec, "block_length")
        if self.cycle <= 0 or self.block <= 0:
            raise _invalid(f"cycle_length ({self.cycle}) and block_length ({self.block}) must be > 0")

    def __iter__(self):
        # TF's InterleaveDataset step by step: a slot emptied by an exhausted dataset is
        # refilled from the input only when the cycle comes back to it.
        source = iter(self.input)
        slots = [None] * self.cycle
        end_of_input, num_open, ci, bi = False, 0, 0, 0
        while not end_of_input or num_open > 0:
            current = slots[ci]
            if current is not None:
                el = next(current, None)
                if el is not None:
                    bi += 1
                    if bi == self.block:
                        bi, ci = 0, (ci + 1) % self.cycle
                    yield el
                else:
                    slots[ci] = None
                    num_open -= 1
                    bi, ci = 0, (ci + 1) % self.cycle
            elif not end_of_input:
                x = next(source, None)
                if x is None:
                    end_of_input = True
                else:
                    slots[ci] = iter(self.b.inner(self.spec, self.fn(self.b.env, x)))
                    num_open += 1
            else:
                bi, ci = 0, (ci + 1) % self.cycle


# -- batching ----------------------------------------------------------------------------
def _stack(elements, i):
    first = elements[0][i]
    for k, el in enumerate(elements[1:], 1):
        if np.shape(el[i]) != np.shape(first):
            raise _invalid(f"Cannot batch tensors with different shapes in component {i}. First "
                           f"element had shape {list(np.shape(first))} and element {k} had shape "
                           f"{list(np.shape(el[i]))}.")
    return np.stack([el[i] for el in elements])


@stage("batch")
class Batch:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.size = b.scalar(spec, "batch_size")
        if self.size <= 0:
            raise _invalid(f"Batch size must be greater than zero, got {self.size}")
        self.drop = spec["drop_remainder"]

    def _emit(self, group):
        return tuple(_stack(group, i) for i in range(len(group[0])))

    def __iter__(self):
        group = []
        for el in self.input:
            group.append(el)
            if len(group) == self.size:
                yield self._emit(group)
                group = []
        if group and not self.drop:
            yield self._emit(group)


@stage("padded_batch")
class PaddedBatch(Batch):
    def __init__(self, spec, b):
        super().__init__(spec, b)
        self.shapes = spec["padded_shapes"]
        self.pads = [b.value(spec, f"pad{i}") for i in range(len(self.shapes))]

    def _emit(self, group):
        out = []
        for i, (want, pad) in enumerate(zip(self.shapes, self.pads)):
            vals = [np.asarray(el[i]) for el in group]
            longest = np.max([v.shape for v in vals], axis=0) if vals[0].ndim else ()
            target = [int(m) if w is None else w for w, m in zip(want, longest)]
            batch = np.full([len(vals)] + target, pad, dtype=vals[0].dtype)
            for k, v in enumerate(vals):
                if any(g > t for g, t in zip(v.shape, target)):
                    raise _invalid(f"Attempted to pad to a smaller size than the input element: "
                                   f"component {i} has shape {list(v.shape)}, padded shape {target}")
                batch[(k,) + tuple(slice(0, d) for d in v.shape)] = v
            out.append(batch)
        return tuple(out)


@stage("unbatch")
class Unbatch:
    def __init__(self, spec, b):
        self.input = b.input(spec)

    def __iter__(self):
        for el in self.input:
            sizes = {np.shape(c)[0] if np.ndim(c) else None for c in el}
            if None in sizes or len(sizes) != 1:
                raise _invalid(f"unbatch: the components' first dimensions differ or are missing: "
                               f"{[list(np.shape(c)) for c in el]}")
            for k in range(sizes.pop()):
                yield tuple(c[k] for c in el)


# -- order and count -----------------------------------------------------------------
@stage("shuffle")
class Shuffle:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.size = b.scalar(spec, "buffer_size")
        if self.size <= 0:
            raise _invalid(f"buffer_size must be greater than zero, got {self.size}")
        seeds = (spec["seed"], spec["seed2"])
        if "seed" in spec["tensors"]:  # from a TF graph, where they are tensors
            seeds = (b.scalar(spec, "seed"), b.scalar(spec, "seed2"))
            seeds = (None, None) if seeds == (0, 0) else seeds
        self.seeds = None if seeds == (None, None) else [s or 0 for s in seeds]
        self.reshuffle = spec["reshuffle"]
        self.epochs = np.random.default_rng(self.seeds)  # one seed per pass when reshuffling

    def __iter__(self):
        rng = np.random.default_rng(self.epochs.integers(1 << 62) if self.reshuffle
                                    else self.seeds)
        buf = []
        for el in self.input:
            if len(buf) < self.size:
                buf.append(el)
                continue
            i = int(rng.integers(len(buf)))
            yield buf[i]
            buf[i] = el
        while buf:
            i = int(rng.integers(len(buf)))
            buf[i], buf[-1] = buf[-1], buf[i]
            yield buf.pop()


@stage("repeat")
class Repeat:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.count = b.scalar(spec, "count")

    def __iter__(self):
        n = 0
        while self.count < 0 or n < self.count:
            produced = False
            for el in self.input:
                produced = True
                yield el
            if not produced:
                return  # an empty dataset repeated forever is empty
            n += 1


@stage("take")
class Take:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.count = b.scalar(spec, "count")

    def __iter__(self):
        if self.count == 0:
            return
        for n, el in enumerate(self.input, 1):
            yield el
            if n == self.count:
                return


@stage("skip")
class Skip(Take):
    def __iter__(self):
        it = iter(self.input)
        if self.count < 0:
            for _ in it:
                pass
            return
        for _ in range(self.count):
            if next(it, None) is None:
                return
        yield from it


@stage("shard")
class Shard:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.n, self.index = b.scalar(spec, "num_shards"), b.scalar(spec, "index")
        if self.n <= 0 or not 0 <= self.index < self.n:
            raise _invalid(f"Index must be in [0, num_shards): index {self.index}, "
                           f"num_shards {self.n}")

    def __iter__(self):
        for k, el in enumerate(self.input):
            if k % self.n == self.index:
                yield el


@stage("cache")
class Cache:
    def __init__(self, spec, b):
        self.input = b.input(spec)
        self.cached = None
        filename = b.value(spec, "filename")
        filename = filename.item() if isinstance(filename, np.ndarray) else filename
        filename = filename.decode() if isinstance(filename, bytes) else str(filename)
        if filename:
            from .file_cache import FileCache

            self.input = FileCache(self.input, filename)

    def __iter__(self):
        if self.cached is not None:
            yield from self.cached
            return
        seen = []
        for el in self.input:
            seen.append(el)
            yield el
        self.cached = seen  # only a complete first pass is replayed


_DONE = object()


@stage("prefetch")
class Prefetch:
    """A background thread keeps up to ``buffer_size`` elements ready. The thread stops
    when the consumer stops iterating (the iterator is re-initialized or dropped)."""

    def __init__(self, spec, b):
        self.input = b.input(spec)
        size = b.scalar(spec, "buffer_size")
        self.size = 8 if size == -1 else size  # AUTOTUNE: a fixed depth
        if self.size < 0:
            raise _invalid(f"buffer_size must be >= 0 or AUTOTUNE, got {size}")

    def __iter__(self):
        if self.size == 0:
            yield from self.input
            return
        buf = queue.Queue(self.size)
        stop = threading.Event()
        thread = threading.Thread(target=self._fill, args=(buf, stop), daemon=True,
                                  name="dtf-prefetch")
        thread.start()
        try:
            while True:
                item = buf.get()
                if item is _DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()
            thread.join()

    def _fill(self, buf, stop):
        from dtf.runtime.executor import ignore_float_errors_on_this_thread

        ignore_float_errors_on_this_thread()  # this thread only runs pipeline stages

        def put(item):
            while not stop.is_set():
                try:
                    buf.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    continue
            return False

        try:
            for el in self.input:
                if not put(el):
                    return
            put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            put(e)
