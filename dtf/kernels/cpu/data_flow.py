"""CPU kernels of the queue and conditional-accumulator ops (dtf/ops/data_flow_ops.py).

Queues and accumulators are resources in the task's ResourceManager, shared by every
session and step of the task. Kernels that block (dequeue, take_grad, enqueue on a full
queue) wait on the resource's condition in short slices, so they give up when the step's
deadline or the op's own timeout passes, or when the step is aborted elsewhere: a
blocked step never outlives its client.
"""
from __future__ import annotations

import collections
import heapq
import sys
import threading
import time

import numpy as np

from dtf.framework import errors
from dtf.kernels.registry import ParkedWake, WouldBlock, register_kernel
from dtf.state.resources import as_array

POLL_S = 0.1  # how often a blocked kernel checks for an aborted step
# numpy lets go of the interpreter lock inside a copy or ufunc loop over more than this
# many elements (NPY_BEGIN_THREADS_THRESHOLDED).
GIL_KEPT = 500


def _wait(res, ready, ctx, timeout_ms, describe):
    """Waits (holding ``res.cond``) until ``ready()``; raises DeadlineExceededError at the
    step's deadline or after ``timeout_ms`` (when >= 0), the abort error if the step fails.

    A step run in pieces (``ctx.may_park``: its resume callback) does not wait: the
    callback is registered with the resource, under its lock so no notification is lost,
    and WouldBlock ends this attempt; the step retries the kernel once this resource has
    changed (or at the deadline, or when the step is aborted)."""
    if ready():
        return
    parking = ctx.may_park is not None
    deadline = ctx.deadline
    if timeout_ms is not None and timeout_ms >= 0:
        # A parked kernel is retried: its own timeout counts from its first attempt.
        own = _first_attempt(ctx, res) if parking else time.monotonic()
        own += timeout_ms / 1000.0
        deadline = own if deadline is None else min(deadline, own)
    if parking:
        err = ctx.aborted()
        if err is not None:
            raise err
        if deadline is not None and time.monotonic() >= deadline:
            raise errors.DeadlineExceededError(None, None, f"Timed out {describe()}")
        wake = ParkedWake(ctx.may_park, res, ready)
        res.waiters.append(wake)
        raise WouldBlock(subscribed=True, deadline=deadline, wake=wake)
    ctx.flush_sends()  # what this partition already sent may be what unblocks us
    start = time.monotonic()
    while not ready():
        err = ctx.aborted()
        if err is not None:
            raise err
        wait = POLL_S
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise errors.DeadlineExceededError(
                    None, None, f"Timed out after {time.monotonic() - start:.1f} s {describe()}")
            wait = min(wait, left)
        res.cond.wait(wait)


def _first_attempt(ctx, res) -> float:
    if ctx.extra is None:
        ctx.extra = {}
    return ctx.extra.setdefault(("first_wait", id(res)), time.monotonic())


def _has_waiters(cond) -> bool:
    """Whether a thread waits in ``cond.wait()`` (call holding its lock). notify_all()
    costs about a microsecond even with no one waiting, and an enqueue that reaches a
    dequeuer's need finds the need registered until the dequeuer has the interpreter lock
    again: every enqueue meanwhile notified once more (a threading.Condition keeps its
    waiters in ``_waiters``)."""
    return bool(cond._waiters)


def acquire_holding_gil(lock, tries=3):
    """``lock.acquire()`` for a lock that threads hold only briefly, taken while this
    thread holds the interpreter lock. A blocking acquire sleeps without the interpreter
    lock and, once the holder releases it, takes it first and the interpreter lock after:
    holding ``lock`` while it waits (up to a switch interval) for the interpreter lock, so
    the thread that released it blocks on it at its next record, and so on. Two queue
    runner threads sharing a reader fell into that convoy and stayed there: two context
    switches per record, half the records per second. Instead a busy lock is retried after
    ``time.sleep(0)``, which lets its holder (waiting for the interpreter lock) finish;
    only then does this block (a holder that itself waits, e.g. for file names)."""
    if lock.acquire(False):
        return
    for _ in range(tries):
        time.sleep(0)
        if lock.acquire(False):
            return
    lock.acquire()


class holding_gil:
    """``with holding_gil(lock):`` takes ``lock`` by acquire_holding_gil."""

    __slots__ = ("lock",)

    def __init__(self, lock):
        self.lock = lock

    def __enter__(self):
        acquire_holding_gil(self.lock)

    def __exit__(self, *exc):
        self.lock.release()


class _Waitable:
    """A resource kernels wait on: its condition, and the resume callbacks of parked steps."""

    def _init_waiting(self):
        self.cond = threading.Condition()
        self.waiters: list = []

    def _notify(self):
        """Wakes blocked kernels and parked steps (call holding ``cond``). A server's I/O
        thread parks its steps instead of waiting in ``cond``: on a sync ps nobody waits
        there, and notify_all would cost its microsecond on each of the ~10 changes of its
        accumulators and queues per global step anyway (see _has_waiters)."""
        if _has_waiters(self.cond):
            self.cond.notify_all()
        self._resume_parked()

    def _resume_parked(self):
        """Resumes the parked steps this change may let go on; the others stay registered
        (their kernels wait for more: ParkedWake.due)."""
        if self.waiters:
            waiters, self.waiters = self.waiters, []
            for wake in waiters:
                if wake.due():
                    wake()
                else:
                    self.waiters.append(wake)


def _resource_kernel(make):
    """Factory of a handle op: ``make(attrs, name)`` builds the resource on first use."""

    def factory(node):
        a = node.attrs
        container, name = a.get("container", ""), a.get("shared_name") or node.name
        # A queue runner's every step runs its queues' and reader's handle ops: the handle
        # found last is kept with the manager and its generation (bumped by every clear, as
        # Session.reset does), so a step finds it in one frame instead of two dict lookups.
        # One tuple, rebound whole, so threads sharing the kernel never see a torn entry.
        cached = (None, -1, None)

        def handle(ctx):
            nonlocal cached
            m = ctx.resources
            c = cached
            if c[0] is m and c[1] == m.generation:
                return c[2]
            gen = m.generation  # read before the lookup: a clear in between re-looks next time
            r = m.get_or_create(container, name, lambda: make(a, name))
            cached = (m, gen, r)
            return r

        return handle

    return factory


def _exact_dtypes(dts):
    """Per DType, the numpy dtype an array must have to be enqueued as it is; None for
    strings (as_array turns str items of object arrays into bytes)."""
    return [None if dt.name == "string" else np.dtype(dt.as_numpy_dtype) for dt in dts]


class _Resource:
    """What a fetched handle reads as: the resource's name."""

    def read(self):
        return np.asarray(self.name.encode(), dtype=object)


# -- queues ----------------------------------------------------------------------------
class QueueResource(_Resource, _Waitable):
    def __init__(self, attrs, name):
        self.name = name
        capacity = int(attrs.get("capacity", -1))
        self.capacity = sys.maxsize if capacity < 0 else capacity
        self.dtypes = list(attrs["component_types"])
        self._np_dtypes = None  # see _element
        self._exact = None  # see _exact_layout
        self.shapes = [tuple(s) for s in attrs.get("shapes") or []] or None
        self.items = collections.deque()
        self._init_waiting()
        # How many elements each blocked dequeuing thread waits for: an enqueue wakes the
        # threads only once one of them can go on. Waking the consumer of a shuffle_batch
        # (waiting for batch + min_after_dequeue) on every enqueued record made it and the
        # enqueue threads hand the GIL and the lock back and forth per record.
        self.dequeue_needs: list = []
        self.closed = False
        self.cancel_enqueues = False

    def _element(self, comps, node):
        # A runner's every record: components that already are arrays of the queue's
        # dtypes and shapes are the element as they are (what the general path below
        # returns for them), checked in one loop without its calls per component.
        exact = self._exact
        if exact is None or len(exact) != len(self.dtypes):
            exact = self._exact = self._exact_layout()
        if len(comps) == len(exact):
            for v, (nd, shape) in zip(comps, exact):
                if type(v) is not np.ndarray or v.dtype is not nd or (
                        shape is not None and v.shape != shape):
                    break
            else:
                return tuple(comps)
        np_dtypes = self._np_dtypes
        if np_dtypes is None or len(np_dtypes) != len(self.dtypes):
            np_dtypes = self._np_dtypes = _exact_dtypes(self.dtypes)
        # A component that already is an array of the queue's dtype is what as_array would
        # return (np.asarray gives it back): a runner's every record skips that call.
        el = tuple([v if type(v) is np.ndarray and v.dtype is nd else as_array(v, dt)
                    for v, dt, nd in zip(comps, self.dtypes, np_dtypes)])
        if self.shapes is not None:
            for i, (v, want) in enumerate(zip(el, self.shapes)):
                if not self._fits(v.shape, want):
                    raise errors.InvalidArgumentError(
                        node.name, None, f"Shape mismatch in tuple component {i}. Expected "
                        f"{list(want)}, got {list(v.shape)}")
        return el

    def _exact_layout(self):
        """(numpy dtype, shape) per component that _element's fast path accepts as it is:
        no strings (None: as_array converts their items), and the queue's shape."""
        shapes = self.shapes or [None] * len(self.dtypes)  # None: any shape (none fixed)
        # A shape with a None dimension equals no array's shape: such components always
        # take the general path.
        return list(zip(_exact_dtypes(self.dtypes), shapes))

    @staticmethod
    def _fits(shape, want):
        return shape == want

    def stack(self, i, values):
        """Component ``i`` of dequeued elements as one batch."""
        first = values[0]
        if self.shapes is not None and first.dtype != object:
            # Elements of one shape and dtype (checked as they came in): np.array builds
            # the same batch as np.stack without converting and reshaping each element
            # first, in half the time for 128 images and a fifteenth for 128 scalars.
            if first.size <= GIL_KEPT:
                return np.array(values)
            # But it copies element by element, and numpy lets go of the interpreter lock
            # for every copy of more than GIL_KEPT elements: a shuffle_batch consumer then
            # waited for the lock once per image while the runner threads took it (up to
            # a switch interval each time). bytearray.join copies the same bytes holding
            # the lock below 1 MiB (CPython's threshold), in about a third of the time.
            try:
                data = bytearray().join(values)
            except (BufferError, TypeError):  # an element that is not C-contiguous
                return np.array(values)
            return np.frombuffer(data, first.dtype).reshape((len(values),) + first.shape)
        return np.stack(values)

    def enqueue(self, ctx, elements, timeout_ms, node):
        with holding_gil(self.cond):  # queue runners contend for it on every record
            if self.closed:
                raise errors.CancelledError(node.name, None, f"{self.kind} '{self.name}' is closed.")
            if len(elements) == 1 and len(self.items) < self.capacity and not self.cancel_enqueues:
                # One element with room for it, a queue runner's every step: what the loop
                # below does then, without its wait conditions.
                self.items.append(elements[0])
                self._notify_enqueued()
                return
            if ctx.may_park is not None:
                # A parked kernel is retried from the start: it enqueues all or nothing.
                if len(elements) > self.capacity:
                    raise WouldBlock()  # can only go in piece by piece: needs a thread
                _wait(self, lambda: self.cancel_enqueues
                      or len(self.items) + len(elements) <= self.capacity, ctx, timeout_ms,
                      lambda: f"waiting to enqueue into full queue '{self.name}'")
            for el in elements:
                _wait(self, lambda: self.cancel_enqueues or len(self.items) < self.capacity,
                      ctx, timeout_ms, lambda: f"waiting to enqueue into full queue '{self.name}'")
                if self.cancel_enqueues:
                    raise errors.CancelledError(
                        node.name, None, f"Enqueue operation was cancelled: {self.kind} '{self.name}' "
                        "was closed")
                self.items.append(el)
                self._notify_enqueued()

    def _notify_enqueued(self):
        """An enqueue only unblocks dequeuers (and parked steps, which re-check themselves)."""
        needs = self.dequeue_needs
        if needs and len(self.items) >= min(needs) and _has_waiters(self.cond):
            self.cond.notify_all()
        self._resume_parked()

    min_after_dequeue = 0  # elements kept back until the queue closes (RandomShuffleQueue)

    def dequeue(self, ctx, n, timeout_ms, node, up_to=False):
        """``n`` elements; with ``up_to``, what is left (at least one) once closed."""
        with holding_gil(self.cond):  # the consumer of a pipeline contends with its producers
            need = n + self.min_after_dequeue  # close() notifies when it lowers this
            self.dequeue_needs.append(need)
            try:
                _wait(self, lambda: self.closed or len(self.items) >= n + self.min_after_dequeue,
                      ctx, timeout_ms,
                      lambda: f"waiting to dequeue {n} element(s) from queue '{self.name}' (it "
                              f"holds {len(self.items)}): whatever feeds it may have stopped")
            finally:
                self.dequeue_needs.remove(need)
            if len(self.items) < n:
                if not (up_to and self.items):
                    raise errors.OutOfRangeError(
                        node.name, None, f"{self.kind} '{self.name}' is closed and has insufficient "
                        f"elements (requested {n}, current size {len(self.items)})")
                n = len(self.items)
            taken = self._take(n)
            self._notify()
            return taken

    kind = "FIFOQueue"

    def _take(self, n):
        return [self.items.popleft() for _ in range(n)]

    def close(self, cancel_pending_enqueues):
        with self.cond:
            self.closed = True
            self.cancel_enqueues = self.cancel_enqueues or cancel_pending_enqueues
            self._notify()


register_kernel("FIFOQueueV2", "CPU")(_resource_kernel(QueueResource))


class RandomShuffleQueueResource(QueueResource):
    """Dequeues uniformly at random, keeping ``min_after_dequeue`` elements back (so that
    what comes out is well mixed) until the queue is closed."""

    kind = "RandomShuffleQueue"

    def __init__(self, attrs, name):
        super().__init__(attrs, name)
        self.min_after_dequeue = int(attrs.get("min_after_dequeue", 0))
        seeds = (attrs.get("seed", 0), attrs.get("seed2", 0))
        self.rng = np.random.default_rng(None if seeds == (0, 0) else list(seeds))
        self.items = []  # random access: a deque indexes in O(n)

    def _take(self, n):
        items, taken = self.items, []
        # One draw per element, bounded by the shrinking size; drawn in one call (the same
        # numbers as n scalar draws).
        for i in self.rng.integers(np.arange(len(items), len(items) - n, -1)).tolist():
            items[i], items[-1] = items[-1], items[i]
            taken.append(items.pop())
        return taken

    def close(self, cancel_pending_enqueues):
        with self.cond:
            self.min_after_dequeue = 0  # closed: everything left may come out
        super().close(cancel_pending_enqueues)


register_kernel("RandomShuffleQueueV2", "CPU")(_resource_kernel(RandomShuffleQueueResource))


class PaddingFIFOQueueResource(QueueResource):
    """A FIFO queue whose components may vary along dimensions given as None; a batch is
    padded (zeros, empty strings) to its largest element."""

    kind = "PaddingFIFOQueue"

    def __init__(self, attrs, name):
        super().__init__(attrs, name)
        self.shapes = [tuple(s) for s in attrs["shapes"]]

    @staticmethod
    def _fits(shape, want):
        return len(shape) == len(want) and all(w is None or w == d for d, w in zip(shape, want))

    def stack(self, i, values):
        longest = tuple(max(dims) for dims in zip(*(v.shape for v in values))) if values[0].ndim else ()
        out = np.zeros((len(values),) + longest, dtype=values[0].dtype)
        if out.dtype == object:
            out.fill(b"")
        for k, v in enumerate(values):
            out[(k,) + tuple(slice(0, d) for d in v.shape)] = v
        return out


register_kernel("PaddingFIFOQueueV2", "CPU")(_resource_kernel(PaddingFIFOQueueResource))


class _PriorityHeap:
    """A priority queue's elements: a heap on (priority, arrival), so the lowest priority
    comes out first and equal priorities in arrival order."""

    def __init__(self):
        self._heap, self._seq = [], 0

    def append(self, el):
        heapq.heappush(self._heap, (int(el[0]), self._seq, el))
        self._seq += 1

    def pop(self):
        return heapq.heappop(self._heap)[2]

    def __len__(self):
        return len(self._heap)

    def __bool__(self):
        return bool(self._heap)


class PriorityQueueResource(QueueResource):
    """Elements are (int64 priority, *values); the attrs describe the values only."""

    kind = "PriorityQueue"

    def __init__(self, attrs, name):
        super().__init__(attrs, name)
        from dtf.framework import dtypes

        self.dtypes = [dtypes.int64] + self.dtypes
        if self.shapes is not None:
            self.shapes = [()] + self.shapes
        self.items = _PriorityHeap()

    def _take(self, n):
        return [self.items.pop() for _ in range(n)]

    def dequeue(self, ctx, n, timeout_ms, node, up_to=False):
        # TF's priority queue has no small batches: dequeue_up_to on a closed queue with too
        # few elements fails as dequeue_many does (TF also loses what it had taken; here
        # they stay in the queue).
        return super().dequeue(ctx, n, timeout_ms, node, up_to=False)


register_kernel("PriorityQueueV2", "CPU")(_resource_kernel(PriorityQueueResource))


@register_kernel("QueueEnqueueV2", "CPU", blocking=True)
def queue_enqueue(node):
    timeout = node.attrs.get("timeout_ms", -1)

    def compute(ctx, queue, *comps):
        queue.enqueue(ctx, [queue._element(comps, node)], timeout, node)

    return compute


@register_kernel("QueueEnqueueManyV2", "CPU", blocking=True)
def queue_enqueue_many(node):
    timeout = node.attrs.get("timeout_ms", -1)

    def compute(ctx, queue, *comps):
        comps = [as_array(v, dt) for v, dt in zip(comps, queue.dtypes)]
        sizes = {np.shape(c)[0] if np.ndim(c) else None for c in comps}
        if None in sizes or len(sizes) != 1:
            raise errors.InvalidArgumentError(
                node.name, None, "Shape mismatch in enqueue_many: every component needs the same "
                f"dimension 0, got shapes {[list(np.shape(c)) for c in comps]}")
        n = sizes.pop()
        queue.enqueue(ctx, [queue._element([c[i] for c in comps], node) for i in range(n)],
                      timeout, node)

    return compute


def _single_or_tuple(values):
    return values[0] if len(values) == 1 else tuple(values)


@register_kernel("QueueDequeueV2", "CPU", blocking=True)
def queue_dequeue(node):
    timeout = node.attrs.get("timeout_ms", -1)

    def compute(ctx, queue):
        (el,) = queue.dequeue(ctx, 1, timeout, node)
        return _single_or_tuple(el)

    return compute


@register_kernel("QueueDequeueManyV2", "CPU", blocking=True)
def queue_dequeue_many(node):
    timeout = node.attrs.get("timeout_ms", -1)

    def compute(ctx, queue, n, up_to=False):
        n = int(n)
        if n < 0:
            raise errors.InvalidArgumentError(node.name, None, f"DequeueMany requested {n} < 0 elements")
        taken = queue.dequeue(ctx, n, timeout, node, up_to)
        out = []
        for i, dt in enumerate(queue.dtypes):
            if taken:
                out.append(queue.stack(i, [el[i] for el in taken]))
            else:
                shape = queue.shapes[i] if queue.shapes else ()
                out.append(np.empty((0,) + tuple(d or 0 for d in shape), dtype=dt.as_numpy_dtype))
        return _single_or_tuple(out)

    return compute


@register_kernel("QueueDequeueUpToV2", "CPU", blocking=True)
def queue_dequeue_up_to(node):
    many = queue_dequeue_many(node)

    def compute(ctx, queue, n):
        return many(ctx, queue, n, up_to=True)

    return compute


@register_kernel("QueueSizeV2", "CPU")
def queue_size(node):
    return lambda ctx, queue: np.asarray(len(queue.items), dtype=np.int32)


@register_kernel("QueueCloseV2", "CPU")
def queue_close(node):
    cancel = bool(node.attrs.get("cancel_pending_enqueues", False))
    return lambda ctx, queue: queue.close(cancel)


# -- conditional accumulators --------------------------------------------------------
class AccumulatorResource(_Resource, _Waitable):
    def __init__(self, attrs, name):
        self.name = name
        self.dtype = attrs["dtype"]
        self.shape = attrs.get("shape")
        self.mean = attrs.get("reduction_type", "MEAN") == "MEAN"
        self._np_dtype = np.dtype(self.dtype.as_numpy_dtype)
        self._init_waiting()
        self.sum = None  # this accumulator's own array: gradients are added into it
        self.count = 0
        self.global_step = 0

    def _check_shape(self, grad, node):
        want = self.sum.shape if self.sum is not None else self.shape
        if want is None:
            return
        if len(want) != grad.ndim or any(w is not None and w != g for w, g in zip(want, grad.shape)):
            raise errors.InvalidArgumentError(
                node.name, None, f"Shape mismatch in accumulator '{self.name}': expected shape "
                f"{['?' if w is None else w for w in want]}, got {list(grad.shape)}")

    def apply(self, grad, local_step, node):
        if type(grad) is not np.ndarray or grad.dtype != self._np_dtype:
            grad = as_array(grad, self.dtype)
        with self.cond:
            if local_step < self.global_step:
                return  # stale: computed from variables older than the current step
            total = self.sum
            if total is None:
                self._check_shape(grad, node)
                self.sum = grad.copy()
            else:
                if total.shape != grad.shape:
                    self._check_shape(grad, node)  # raises: the shapes differ
                np.add(total, grad, out=total)  # a sync ps adds every worker's gradient here
            self.count += 1
            self._notify()

    def wait(self, ctx, n, node):
        if n < 1:
            raise errors.InvalidArgumentError(
                node.name, None, f"Argument num_required must be positive, but was {n}")
        _wait(self, lambda: self.count >= n, ctx, -1,
              lambda: f"waiting for {n} gradients in accumulator '{self.name}' (it holds "
                      f"{self.count}): fewer replicas than that are pushing gradients")

    def take(self, ctx, n, node):
        with self.cond:
            self.wait(ctx, n, node)
            total = self.sum
            out = total / self.count if self.mean else total
            self.sum, self.count = None, 0
            self.global_step += 1
            return np.asarray(out, dtype=total.dtype)

    def set_global_step(self, step):
        with self.cond:
            self.global_step = step
            self._notify()


_FLOATS = ("float16", "float32", "float64")
register_kernel("ConditionalAccumulator", "CPU", dtypes=_FLOATS)(_resource_kernel(AccumulatorResource))


@register_kernel("AccumulatorApplyGradient", "CPU", dtypes=_FLOATS)
def accumulator_apply(node):
    return lambda ctx, acc, local_step, grad: acc.apply(grad, int(local_step), node)


@register_kernel("AccumulatorTakeGradient", "CPU", dtypes=_FLOATS, blocking=True)
def accumulator_take(node):
    return lambda ctx, acc, n: acc.take(ctx, int(n), node)


@register_kernel("_AccumulatorWaitReady", "CPU", blocking=True)
def accumulator_wait_ready(node):
    def compute(ctx, acc, n):
        with acc.cond:
            acc.wait(ctx, int(n), node)

    return compute


@register_kernel("AccumulatorNumAccumulated", "CPU")
def accumulator_num(node):
    return lambda ctx, acc: np.asarray(acc.count, dtype=np.int32)


@register_kernel("AccumulatorSetGlobalStep", "CPU")
def accumulator_set_global_step(node):
    return lambda ctx, acc, step: acc.set_global_step(int(step))
