"""Inter-op parallelism (TF's ``inter_op_parallelism_threads``): independent expensive steps
of one plan run on a small pool of threads while the calling thread runs the rest.

Python threads only pay off where kernels release the GIL (numpy loops, BLAS, nogil Numba)
and a handoff costs tens of microseconds, so a plan goes parallel only once measured:

1. its first ``PROFILE_RUNS`` runs are sequential with every step timed;
2. steps whose fastest run took at least ``HEAVY_SECONDS`` are heavy; unless two heavy steps
   are independent (neither feeds the other), the plan stays sequential for good;
3. its next ``PROFILE_RUNS`` runs are parallel (heavy steps on the pool, the rest inline);
   it stays parallel only if its fastest parallel run beat its fastest sequential one.

A plan that never goes parallel runs exactly as before: the executor drops its policy.
Every policy measures again from 1. when kernels change speed (Numba's loops load, a
direct convolution compiles): numpy's stand-ins run on one core, the loops on all of them,
so a plan whose steps gained from the pool while numpy ran can lose from it afterwards
(the ResNet step, bench M3: 61 ms a step parallel against 50 sequential once loaded).
"""
from __future__ import annotations

import queue
import threading
import time
import weakref

import numpy as np

from dtf.kernels.cpu import jit_loading
from dtf.runtime.fusion import FusedStep, TailStep
from dtf.framework.op_registry import get_op_def, has_op
from dtf.runtime.executor import _deref, _invoke

PROFILE_RUNS = 3
HEAVY_SECONDS = 1e-3
# A parallel trial must beat the sequential runs by this factor: noise is not a gain.
MIN_GAIN = 0.95


class InterOpPool:
    """``size`` daemon threads serving one task queue, started on first use; ``close()``
    joins them (a later ``submit`` starts fresh ones). The threads hold only the queue,
    so an unclosed pool that is garbage collected still stops them."""

    def __init__(self, size: int):
        self.size = size
        self._lock = threading.Lock()
        self._tasks = None
        self._threads: list = []
        self._finalizer = None

    def submit(self, fn, *args):
        """Runs ``fn(*args)`` on a pool thread; ``fn`` must not raise."""
        tasks = self._tasks
        if tasks is None:
            tasks = self._start()
        tasks.put((fn, args))

    def _start(self):
        with self._lock:
            if self._tasks is None:
                tasks = queue.SimpleQueue()
                threads = [threading.Thread(target=_serve, args=(tasks,), daemon=True,
                                            name=f"dtf-inter-op-{k}") for k in range(self.size)]
                for t in threads:
                    t.start()
                self._finalizer = weakref.finalize(self, _stop, tasks, threads)
                self._threads, self._tasks = threads, tasks
            return self._tasks

    def close(self):
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
            self._tasks, self._threads, self._finalizer = None, [], None


def _serve(tasks):
    np.seterr(all="ignore")  # error state is per thread; TF's kernels never warn
    while True:
        item = tasks.get()
        if item is None:
            return
        fn, args = item
        fn(*args)


def _stop(tasks, threads):
    for _ in threads:
        tasks.put(None)
    current = threading.current_thread()
    for t in threads:
        if t is not current:
            t.join()


class InterOp:
    """The parallelism policy of one plan (see the module docstring)."""

    def __init__(self, plan, pool: InterOpPool, graph):
        self.plan = plan
        self.pool = pool
        self.consumers, self.initial_pending = _keeping_variable_order(
            plan.steps, graph, plan.variable_slots)
        self._lock = threading.Lock()
        self._restart()
        _POLICIES.add(self)

    def _restart(self):
        with self._lock:
            self.step_min = [float("inf")] * len(self.plan.steps)
            self.seq_min = float("inf")
            self.par_min = float("inf")
            self.seq_runs = 0
            self.par_runs = 0
            self.heavy = None  # per step: run on the pool (decided after profiling)
            self.stale = False  # set from another thread: restart at the next run

    def measure_again(self):
        """Profiles the plan afresh from its next run, even if it had settled on
        sequential (the plan holds its policy in ``inter_op_policy`` for this)."""
        with self._lock:
            self.stale = True
            self.plan.inter_op = self

    def run(self, ctx, vals, stats):
        if self.stale:
            self._restart()
        heavy = self.heavy  # read once: another thread running the plan may restart it
        if heavy is None:
            if stats is not None:
                _run_traced(self.plan.steps, ctx, vals, stats)
            else:
                self._profile(ctx, vals)
        elif stats is not None or self.par_runs >= PROFILE_RUNS:
            _ParallelRun(self, heavy, ctx, vals, stats).run()
        else:
            t0 = time.perf_counter()
            _ParallelRun(self, heavy, ctx, vals, None).run()
            self._trial_done(time.perf_counter() - t0)

    def _profile(self, ctx, vals):
        times = []
        t0 = time.perf_counter()
        for step in self.plan.steps:
            t = time.perf_counter()
            _invoke(step, ctx, vals)
            times.append(time.perf_counter() - t)
        total = time.perf_counter() - t0
        with self._lock:
            self.step_min = [min(a, b) for a, b in zip(self.step_min, times)]
            self.seq_min = min(self.seq_min, total)
            self.seq_runs += 1
            if self.seq_runs == PROFILE_RUNS:
                self._choose_heavy()

    def _choose_heavy(self):
        steps = self.plan.steps
        heavy = [t >= HEAVY_SECONDS and _may_run_on_pool(steps[i].compute)
                 for i, t in enumerate(self.step_min)]
        if _independent_pair(heavy, self.consumers, self.initial_pending):
            self.heavy = heavy
        elif not self.stale:
            self.plan.inter_op = None

    def _trial_done(self, seconds):
        with self._lock:
            self.par_min = min(self.par_min, seconds)
            self.par_runs += 1
            if (self.par_runs == PROFILE_RUNS and self.par_min >= MIN_GAIN * self.seq_min
                    and not self.stale):
                self.plan.inter_op = None


# Every live policy, to be told when kernels change speed (see the module docstring).
_POLICIES: "weakref.WeakSet[InterOp]" = weakref.WeakSet()


def _measure_all_again():
    for policy in list(_POLICIES):
        policy.measure_again()


jit_loading.on_kernels_changed(_measure_all_again)


def _may_run_on_pool(compute) -> bool:
    """A fused elementwise group already runs a parallel Numba kernel over every core:
    another thread adds nothing, and Numba's workqueue threading layer aborts the process
    on concurrent launches. Keeping such steps on the calling thread rules both out (a
    TailStep's pass is serial)."""
    return not isinstance(compute, FusedStep) or isinstance(compute, TailStep)


def _run_traced(steps, ctx, vals, stats):
    for step in steps:
        _invoke(step, ctx, vals, stats)


def _independent_pair(heavy, consumers, initial_pending) -> bool:
    """Whether two heavy steps can run at once. In a topological order h_0, h_1, ... of the
    heavy steps they all depend on one another exactly when each h_k is an ancestor of
    h_k+1 (a chain), so only consecutive pairs are checked."""
    order = _topological(consumers, initial_pending)
    bit = {}
    for i in order:
        if heavy[i]:
            bit[i] = 1 << len(bit)
    if len(bit) < 2:
        return False
    ancestors = [0] * len(heavy)  # heavy ancestors of each step, as bits
    for i in order:
        reach = ancestors[i] | bit.get(i, 0)
        for c in consumers[i]:
            ancestors[c] |= reach
    chain = [i for i in order if heavy[i]]
    return any(not ancestors[b] & bit[a] for a, b in zip(chain, chain[1:]))


def _keeping_variable_order(steps, graph, variable_slots):
    """The plan's dataflow graph (consumers, pending counts) with edges that keep the
    sequential order among the steps touching one variable: a read after the update before
    it, an update after the reads and the update before it. A read of a variable happens at
    its consumer's turn (TF's ``v/read`` aliases the variable's buffer), so without them a
    parallel run could let ``ApplyGradientDescent`` on a dense layer's kernel run before the
    product that takes the kernel to the layer's input gradient: the step's result then
    hung on which thread came first (a training run's fifth loss 0.90286, 0.90296 or
    0.90315 from one run to the next), where the sequential order gives one answer."""
    consumers = [list(c) for c in graph[0]]
    pending = list(graph[1])
    edges = [set(c) for c in consumers]

    def edge(a, b):
        if a != b and b not in edges[a]:
            edges[a].add(b)
            consumers[a].append(b)
            pending[b] += 1

    last_update, reads_since = {}, {}
    for i, st in enumerate(steps):
        if st.nout and st.out in variable_slots:  # a variable, or an Identity passing its handle
            continue
        for pos, slot in enumerate(st.ins):
            var = variable_slots.get(slot)
            if var is None:
                continue
            update = last_update.get(var)
            if update is not None:
                edge(update, i)
            if _only_reads(st, pos):
                reads_since.setdefault(var, []).append(i)
            else:
                for r in reads_since.pop(var, ()):
                    edge(r, i)
                last_update[var] = i
    return consumers, pending


def _only_reads(step, pos) -> bool:
    """Whether ``step`` only reads the variable whose handle is its input ``pos``: a deref
    step, or a kernel's value input (not one of its op's ``ref_inputs``). A fused group or a
    renamed step may do anything with a handle, so it counts as an update."""
    if step.compute is _deref:
        return True
    node = step.node
    if (isinstance(step.compute, FusedStep) or len(step.ins) != len(node.inputs)
            or not has_op(node.op)):
        return False
    return pos not in get_op_def(node.op).ref_inputs


def _topological(consumers, initial_pending):
    pending = list(initial_pending)
    order = [i for i, p in enumerate(pending) if p == 0]
    for i in order:  # grows while iterating
        for c in consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                order.append(c)
    return order


class _ParallelRun:
    """One run of a plan: the calling thread schedules, runs the light steps and, when it
    would otherwise wait, heavy ones too; at most ``pool.size`` heavy steps are on the pool.
    All bookkeeping stays on the calling thread; pool threads only report back. The first
    error stops new launches and is raised once every launched step has finished."""

    __slots__ = ("policy", "heavy", "ctx", "vals", "stats", "pending", "light", "heavy_ready",
                 "remaining", "in_flight", "results", "error")

    def __init__(self, policy, heavy, ctx, vals, stats):
        self.policy, self.heavy = policy, heavy
        self.ctx, self.vals, self.stats = ctx, vals, stats
        self.pending = list(policy.initial_pending)
        self.light, self.heavy_ready = [], []
        self.remaining = len(self.pending)
        self.in_flight = 0
        self.results = queue.SimpleQueue()
        self.error = None
        for i, p in enumerate(self.pending):
            if p == 0:
                self._ready(i)

    def run(self):
        steps = self.policy.plan.steps
        pool = self.policy.pool
        while self.remaining and self.error is None:
            while self.heavy_ready and self.in_flight < pool.size:
                self.in_flight += 1
                pool.submit(self._on_pool, self.heavy_ready.pop())
            if self.light or self.heavy_ready:
                i = self.light.pop() if self.light else self.heavy_ready.pop()
                try:
                    _invoke(steps[i], self.ctx, self.vals, self.stats)
                except Exception as e:  # noqa: BLE001 - raised below, after the pool's steps
                    self.error = e
                    break
                self._done(i)
                self._collect(block=False)
            else:
                self._collect(block=True)
        while self.in_flight:
            self._collect(block=True)
        if self.error is not None:
            raise self.error

    def _on_pool(self, i):
        try:
            _invoke(self.policy.plan.steps[i], self.ctx, self.vals, self.stats)
            self.results.put((i, None))
        except BaseException as e:  # noqa: BLE001 - handed to the calling thread
            self.results.put((i, e))

    def _collect(self, block):
        """Takes finished pool steps: at least one when ``block``."""
        results = self.results
        while block or not results.empty():
            block = False
            i, error = results.get()
            self.in_flight -= 1
            if error is not None:
                self.error = self.error or error
            elif self.error is None:
                self._done(i)

    def _done(self, i):
        self.remaining -= 1
        pending = self.pending
        for c in self.policy.consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                self._ready(c)

    def _ready(self, i):
        (self.heavy_ready if self.heavy[i] else self.light).append(i)
