"""Executor: runs one subgraph (a list of NodeDefs on one device) for a signature
(fetches, feeds, targets), compiled once into a flat plan of kernel calls over value slots.

The executor never looks at op types by name: kernels come from the kernel registry and
reference semantics (which inputs take a variable handle) from the op registry.
"""
from __future__ import annotations

import threading
import time
import numpy as np

from dtf.framework import errors
from dtf.framework.op_registry import get_op_def
from dtf.runtime import fusion
from dtf.runtime.constant_folding import split_constants
from dtf.runtime.dataflow_units import dataflow_units
from dtf.kernels import registry as kernel_registry
from dtf.kernels.registry import WouldBlock
from dtf.kernels.reference.random import seeded_generator
from dtf.framework.graph_walk import needed_nodes, split_tensor_name
from dtf.state.resources import ResourceManager
from dtf.runtime.steps import NodeStat, Step, _invoke, _op_failure  # noqa: F401 (fusion, parallel)


_thread_errors = threading.local()


def ignore_float_errors_on_this_thread():
    """For threads that only ever run steps (a server's I/O and handler threads): numpy's
    error state ignores everything there for good, so their steps skip the error-state
    context each step otherwise enters (1.3 us, on every partition of a cross-task step)."""
    np.seterr(all="ignore")
    _thread_errors.ignored = True


class ExecState:
    """State shared by every step run against one set of resources (a local session,
    or a worker task): variables, and random generators keyed by node."""

    def __init__(self, resources: ResourceManager | None = None):
        self.resources = resources or ResourceManager()
        self._rngs: dict = {}
        self._rng_lock = threading.Lock()

    def rng(self, key, seed, seed2):
        """The persistent generator of a random op: seeded ops repeat per session, as TF's."""
        g = self._rngs.get(key)
        if g is None:
            with self._rng_lock:
                g = self._rngs.get(key)
                if g is None:
                    g = self._rngs[key] = seeded_generator(seed, seed2)
        return g

    def reset_rngs(self):
        self._rngs.clear()


class StepContext:
    """What a kernel sees of the step it runs in."""

    __slots__ = ("state", "resources", "step_id", "rendezvous", "deadline", "device", "task",
                 "cancelled", "extra", "may_park", "values")

    def __init__(self, state: ExecState, step_id=0, rendezvous=None, deadline=None,
                 device="", task=""):
        self.state = state
        self.resources = state.resources
        self.step_id = step_id
        self.rendezvous = rendezvous
        self.deadline = deadline
        self.device = device
        self.task = task
        self.cancelled = False
        self.extra = None
        # While a step runs in pieces: its resume callback, which a kernel about to block
        # registers where it waits before raising WouldBlock (see kernels.registry).
        self.may_park = None
        # The step's value slots: a row update counts which references to a variable's
        # array are this step's own (dtf/kernels/cpu/scatter.py).
        self.values = None

    def rng(self, node_name, seed, seed2):
        return self.state.rng(node_name, seed, seed2)

    def flush_sends(self):
        """Sends queued tensors now: a kernel about to block calls it first."""
        if self.rendezvous is not None:
            self.rendezvous.flush()

    def aborted(self):
        """The error the step was aborted with (another partition failed), else None:
        kernels that block poll it so they never outlive their step."""
        return getattr(self.rendezvous, "_error", None)


def _deref(ctx, handle):
    return handle.read()


class Plan:
    """A compiled step: kernels in topological order over a flat list of value slots."""

    def __init__(self, steps, n_slots, feed_slots, fetch_slots, fetch_is_ref, node_count, device,
                 blocking_nodes=frozenset(), constants=(), variable_slots=None):
        self.steps = steps
        # Slots that hold a variable's handle -> the variable's own slot (a forwarding
        # Identity's handle is its variable's): which steps touch the same variable.
        self.variable_slots = variable_slots or {}
        # Steps whose kernel returns the same value every run (``constant_output``): their
        # slots start filled (``initial``) and they never run; traces list them as run.
        self.constants = list(constants)
        self.initial = [None] * n_slots
        for st in self.constants:
            self.initial[st.out] = st.compute.constant_output
        self.n_slots = n_slots
        self.feed_slots = feed_slots
        self.fetch_slots = fetch_slots
        self.fetch_is_ref = fetch_is_ref
        self.node_count = node_count
        self.device = device
        # Some kernel may wait for other steps (a queue, an accumulator); ``blocking_nodes``
        # names those kernels' nodes, each a dataflow unit of its own (dataflow_units).
        self.blocking = bool(blocking_nodes)
        # Whether a server may run it on its I/O thread (decided by the worker once it ran).
        self.inline = False
        # Whether a worker has run it (it gives free memory back after a plan's first run).
        self.ran = False
        # The inter-op parallelism policy (dtf.runtime.parallel) while it may still pay off,
        # and the policy for good (it measures again when kernels change speed).
        self.inter_op = None
        self.inter_op_policy = None
        # Partitions that receive tensors or may block run as dataflow (see _DataflowRun).
        recv_keys = [getattr(st.compute, "recv_key", None) for st in steps]
        self.receives = any(k is not None for k in recv_keys)
        # (units, their receive keys, consumers, pending counts): see dataflow_units.
        self.dataflow = (dataflow_units(steps, recv_keys, *_dataflow_graph(steps, feed_slots),
                                        may_block=[st.node.name in blocking_nodes for st in steps])
                         if blocking_nodes or self.receives else None)

    def run(self, ctx: StepContext, feed_values, stats: list | None = None):
        # TF's kernels never warn: inf and nan are values. One error-state context per step
        # (about 1.3 us) instead of one per kernel, none on threads that ignore errors.
        if getattr(_thread_errors, "ignored", False):
            return self._run(ctx, feed_values, stats)
        with np.errstate(all="ignore"):
            _thread_errors.ignored = True  # so a dataflow run inside enters no second one
            try:
                return self._run(ctx, feed_values, stats)
            finally:
                _thread_errors.ignored = False

    def _run(self, ctx, feed_values, stats):
        vals = ctx.values = self._slots(feed_values)
        if stats is not None:
            _record_constants(stats, self.constants)
        # Run whole on this thread, a step that only blocks (a queue runner's enqueue, a
        # reader) waits inside its kernels: the sequential loop in topological order does
        # the same at about 1 us less per op than the dataflow bookkeeping. Only receives
        # need the dataflow order here (a tensor may arrive in any order).
        if self.receives:
            _DataflowRun(self, ctx, vals, stats).advance()
        elif self.inter_op is not None:
            self.inter_op.run(ctx, vals, stats)
        elif stats is None:
            self._run_sequential(ctx, vals)
        else:
            for step in self.steps:
                _invoke(step, ctx, vals, stats)
        return self._outputs(ctx, vals)

    def start(self, ctx: StepContext, feed_values) -> "_DataflowRun":
        """A step that runs in pieces: ``advance(on_ready)`` runs what it can and returns
        False when the rest waits for tensors (``on_ready`` is called once one arrives),
        True when done; ``outputs()`` then gives the fetches. Servers run short partitions
        this way on their I/O thread, so no thread waits for a tensor."""
        vals = ctx.values = self._slots(feed_values)
        return _DataflowRun(self, ctx, vals, None)

    def _slots(self, feed_values):
        vals = self.initial.copy()
        for slot, v in zip(self.feed_slots, feed_values):
            vals[slot] = v
        return vals

    def _run_sequential(self, ctx, vals):
        # The hot path of every local step: no timing, no per-step bookkeeping.
        for step in self.steps:
            try:
                step.call(ctx, vals)
            except Exception as e:  # noqa: BLE001 - re-raised as a tf.errors class
                raise step.failure(e, ctx, vals) from e

    def _outputs(self, ctx, vals):
        if ctx.rendezvous is not None:
            ctx.rendezvous.flush(last=True)  # the partition's last sends
        out = []
        for slot, is_ref in zip(self.fetch_slots, self.fetch_is_ref):
            v = vals[slot]
            out.append(v.read() if is_ref else v)
        return out


class _DataflowRun:
    """One step of a partition that receives tensors: steps run as their inputs become
    ready, and a receive whose tensor has not arrived is parked instead of blocking, so
    partitions that exchange tensors in both directions cannot deadlock whatever their
    local order. ``advance()`` blocks until done; ``advance(on_ready)`` returns instead,
    also when a kernel would block (WouldBlock): then ``wake_at`` is when to retry it
    anyway (its deadline), and ``needs_thread`` says the rest must run on a thread."""

    __slots__ = ("plan", "ctx", "vals", "stats", "pending", "ready", "parked", "remaining",
                 "blocked", "wake_at", "needs_thread")

    def __init__(self, plan, ctx, vals, stats):
        self.plan = plan
        self.ctx = ctx
        self.vals = vals
        self.stats = stats
        units, _, _, initial_pending = plan.dataflow
        self.pending = list(initial_pending)
        self.ready = [u for u, p in enumerate(self.pending) if p == 0]
        self.ready.reverse()
        self.parked: dict = {}
        self.remaining = len(units)
        # (unit, WouldBlock) of kernels that would have blocked: retried on a resume once
        # their resource has changed, their deadline passed or the step was aborted.
        self.blocked: list = []
        self.wake_at = None
        self.needs_thread = False

    def advance(self, on_ready=None) -> bool:
        self.wake_at = None
        if self.blocked:
            self._retry_blocked(everything=on_ready is None)
        self.ctx.may_park = on_ready
        try:
            if getattr(_thread_errors, "ignored", False):
                return self._advance(on_ready)
            with np.errstate(all="ignore"):
                return self._advance(on_ready)
        except BaseException:
            self._cancel_wakes(wb for _, wb in self.blocked)
            raise
        finally:
            self.ctx.may_park = None

    def _advance(self, on_ready):
        # The loop body is inlined (one call per step: Step.call): it runs for every unit of
        # every partition that receives tensors, a training step's hottest Python. A unit is
        # a receive, a kernel that may block, or a block of other steps run in order
        # (dataflow_units), so only a lone kernel raises WouldBlock here.
        units, recv_keys, consumers, _ = self.plan.dataflow
        ctx, vals, stats = self.ctx, self.vals, self.stats
        pending, ready, parked = self.pending, self.ready, self.parked
        rendezvous = ctx.rendezvous
        remaining = self.remaining
        try:
            while remaining:
                if ready:
                    u = ready.pop()
                    key = recv_keys[u]
                    if key is None:
                        try:
                            if stats is None:
                                for step in units[u]:
                                    step.call(ctx, vals)
                            else:
                                for step in units[u]:
                                    _invoke(step, ctx, vals, stats)
                        except WouldBlock as wb:
                            self._would_block(u, wb)
                            continue
                        except Exception as e:  # noqa: BLE001 - re-raised as a tf.errors class
                            if stats is not None:
                                raise  # _invoke raised it as one
                            raise step.failure(e, ctx, vals) from e
                    else:
                        value = rendezvous.try_recv(key)
                        if value is _MISSING:
                            parked[key] = u
                            continue
                        vals[units[u][0].out] = value
                        if stats is not None:
                            _record_recv(stats, units[u][0], value)
                    done = (u,)
                else:
                    rendezvous.flush()
                    if on_ready is None:
                        arrived = rendezvous.wait_any(parked, ctx.deadline)
                    else:
                        if self.needs_thread:
                            return False
                        # Also registered when only kernels wait: an abort must wake the step.
                        arrived = rendezvous.take_any_or_notify(parked, on_ready, ctx.deadline)
                        if not arrived:
                            self._park_deadline()
                            return False
                    for u, value in arrived:
                        del parked[recv_keys[u]]
                        vals[units[u][0].out] = value
                        if stats is not None:
                            _record_recv(stats, units[u][0], value)
                    done = [u for u, _ in arrived]
                for u in done:
                    remaining -= 1
                    for c in consumers[u]:
                        pending[c] -= 1
                        if pending[c] == 0:
                            ready.append(c)
            return True
        finally:
            self.remaining = remaining

    def _retry_blocked(self, everything):
        """Makes ready the blocked kernels worth retrying. A synchronous-training step
        resumes for every tensor it receives and every accumulator that changes; a kernel
        whose own resource has not changed would only fail again (and register anew)."""
        if everything or self.ctx.aborted() is not None:
            self._cancel_wakes(wb for _, wb in self.blocked)
            self.ready.extend(i for i, _ in self.blocked)
            self.blocked = []
            return
        now = time.monotonic()
        still = []
        for i, wb in self.blocked:
            if (wb.wake is None or wb.wake.fired
                    or (wb.deadline is not None and now >= wb.deadline)):
                self._cancel_wakes((wb,))
                self.ready.append(i)
            else:
                still.append((i, wb))
                if wb.deadline is not None:
                    self._wake_by(wb.deadline)
        self.blocked = still

    @staticmethod
    def _cancel_wakes(would_blocks):
        for wb in would_blocks:
            if wb.wake is not None:
                wb.wake.cancel()

    def _would_block(self, i, wb):
        self.blocked.append((i, wb))
        if not wb.subscribed:
            self.needs_thread = True
        elif wb.deadline is not None:
            self._wake_by(wb.deadline)

    def _wake_by(self, when):
        self.wake_at = when if self.wake_at is None else min(self.wake_at, when)

    def _park_deadline(self):
        """A parked step asks to be woken at its deadline (then it fails as a wait would)."""
        if self.ctx.deadline is not None:
            self._wake_by(self.ctx.deadline)

    def outputs(self):
        out = self.plan._outputs(self.ctx, self.vals)
        # A server's parked-step callbacks can keep this run alive until the cycle collector
        # runs: drop the step's values now (same-host tensors hold shared-memory segments).
        self.vals = self.ctx.values = None
        return out


def _fusable_op_types(device_type):
    """Op types fusion may merge into a group (their variable reads stay deref steps)."""
    if device_type != "CPU" or not fusion.ENABLED:
        return frozenset()
    from dtf.kernels.cpu.fused import TEMPLATES

    return frozenset(TEMPLATES) | frozenset(fusion.HEADS)


def _reading_variables(compute, positions):
    """``compute`` reading the variables at input ``positions`` itself, when called."""
    if len(positions) == 1:
        (p,) = positions

        def run_one(ctx, *xs):
            xs = list(xs)
            xs[p] = xs[p].read()
            return compute(ctx, *xs)

        return run_one

    def run(ctx, *xs):
        xs = list(xs)
        for p in positions:
            xs[p] = xs[p].read()
        return compute(ctx, *xs)

    return run


def _dropping_reads(steps, read_slots):
    """The steps, those that consume a variable's value read for them alone (a ``_deref``
    step's slot, one consumer each) made to empty that slot once they have run: else the
    slot held the variable's array until the step ended, and an update later in the step
    (ApplyAdam on a dense layer) had to write a fresh copy instead of the array itself."""
    readers: dict = {}
    for st in steps:
        for s in st.ins:
            if s in read_slots:
                readers[s] = readers.get(s, 0) + 1
    out = []
    for st in steps:
        drops = tuple(s for s in st.ins if readers.get(s) == 1)
        if drops:
            st = Step(st.compute, st.ins, st.out, st.nout, st.node, keep=st.keep, drops=drops)
        out.append(st)
    return out


def _drop_unread_outputs(steps, fetch_slots):
    """The steps, those whose outputs no step reads and no fetch names made to drop them
    (Step ``keep``): the ops run for their effect alone (updates under a train op's
    control edges) then hold no value, such as a whole table, until the step ends."""
    read = set(fetch_slots)
    for st in steps:
        read.update(st.ins)
    return [Step(st.compute, st.ins, st.out, st.nout, st.node, keep=False)
            if st.nout and not any(st.out + k in read for k in range(st.nout)) else st
            for st in steps]


def _record_constants(stats, constants):
    now = int(time.time() * 1e6)
    for st in constants:
        stats.append(NodeStat(st.node.name, st.node.op, now, 0,
                              [list(np.shape(st.compute.constant_output))]))


def _record_recv(stats, step, value):
    """A traced step lists its receives too (as TF's step stats do): their output shapes
    say how much each step moved between tasks."""
    node = step.node
    stats.append(NodeStat(node.name, node.op, int(time.time() * 1e6), 0,
                          [list(np.shape(value))]))


class _Missing:
    def __repr__(self):
        return "<not yet received>"


_MISSING = _Missing()
MISSING = _MISSING


def _dataflow_graph(steps, feed_slots):
    """consumers[i] and pending-input counts of each step, from slots and control edges.
    A node's deref steps (just before its kernel step) wait for everything the kernel
    waits for but them: a variable is read at its consumer's turn, as in the sequential
    order (after an assignment the consumer has a data or control edge from)."""
    producer = {}
    for i, st in enumerate(steps):
        for k in range(st.nout):
            producer[st.out + k] = i
    step_of_node = {}
    for i, st in enumerate(steps):
        step_of_node[st.node.name] = i  # the kernel step (after any deref step) wins
    deps = []
    for i, st in enumerate(steps):
        d = {producer[s] for s in st.ins if s in producer}
        if step_of_node.get(st.node.name) == i:
            d |= {step_of_node[c] for c in st.node.control_inputs if c in step_of_node}
        deps.append(d)
    for i, st in enumerate(steps):
        node = st.node
        kernel = step_of_node[node.name]
        if kernel != i:  # a deref step of ``kernel``
            derefs = {j for j in deps[kernel] if steps[j].node.name == node.name}
            deps[i] |= deps[kernel] - derefs
    consumers = [[] for _ in steps]
    pending = [0] * len(steps)
    for i, d in enumerate(deps):
        d.discard(i)
        for j in d:
            consumers[j].append(i)
        pending[i] = len(d)
    return consumers, pending


class Executor:
    """Compiles and caches plans over a mutable set of nodes of one device.

    With ``inter_op_threads`` above 1, plans without receives or blocking kernels may run
    independent expensive steps on ``inter_op_threads - 1`` pool threads besides the
    caller (dtf.runtime.parallel decides per plan, by measuring); ``close()`` stops them."""

    def __init__(self, device_type: str = "CPU", device: str = "", inter_op_threads: int = 1):
        self.device_type = device_type
        self.device = device
        self._nodes: dict = {}
        self._plans: dict = {}
        self._lock = threading.Lock()
        self._pool = None
        if inter_op_threads > 1:
            from dtf.runtime.parallel import InterOpPool  # it imports this module

            self._pool = InterOpPool(inter_op_threads - 1)

    def add_nodes(self, nodes):
        for n in nodes:
            self._nodes[n.name] = n

    def node(self, name):
        return self._nodes[name]

    def plan(self, fetches: tuple, feeds: tuple, targets: tuple, node_lookup=None) -> Plan:
        key = (fetches, feeds, targets)
        p = self._plans.get(key)
        if p is None:
            with self._lock:
                p = self._plans.get(key)
                if p is None:
                    p = build_plan(node_lookup or self._nodes.__getitem__, fetches, feeds, targets,
                                   self.device_type, self.device)
                    self._attach_inter_op(p)
                    self._plans[key] = p
        return p

    def _attach_inter_op(self, plan):
        # Receives run on the dataflow path (servers drive it from their I/O thread), and a
        # blocking kernel could hold a pool thread while it waits for another step.
        if self._pool is None or plan.dataflow is not None or plan.blocking or len(plan.steps) < 2:
            return
        from dtf.runtime.parallel import InterOp

        plan.inter_op = plan.inter_op_policy = InterOp(
            plan, self._pool, _dataflow_graph(plan.steps, plan.feed_slots))

    def cached_plan(self, fetches: tuple, feeds: tuple, targets: tuple) -> Plan | None:
        """The plan of a signature that has run before, else None (never compiles)."""
        return self._plans.get((fetches, feeds, targets))

    def clear(self):
        self._plans.clear()

    def close(self):
        """Drops the plans and stops the inter-op threads (a later run starts them again)."""
        self.clear()
        if self._pool is not None:
            self._pool.close()


def build_plan(lookup, fetches, feeds, targets, device_type="CPU", device="") -> Plan:
    """Prunes the graph to what fetches and targets need (stopping at feeds), orders it
    topologically and binds a kernel to every node."""
    fed = set(feeds)
    order = needed_nodes(lookup, fetches, feeds, targets)
    slot_of: dict[str, int] = {}
    n_slots = 0
    feed_slots = []
    for f in feeds:
        slot_of[f] = n_slots
        feed_slots.append(n_slots)
        n_slots += 1
    # Nodes whose output is a variable handle: variables, and ops that forward a handle
    # (Identity: TF's `v/read` aliases the variable's buffer, so a consumer that runs after
    # an assignment sees the new value; we reproduce that by dereferencing at the consumer).
    ref_producers = set()
    # Each handle's slot -> its variable's slot (see Plan.variable_slots).
    variable_slots = {}
    for node in order:
        opdef = get_op_def(node.op)
        base = n_slots
        n_out = len(node.output_dtypes)
        for k in range(n_out):
            key = f"{node.name}:{k}"
            if key not in slot_of:
                slot_of[key] = base + k
        n_slots += n_out
        out = f"{node.name}:0"
        if opdef.ref_output:
            ref_producers.add(node.name)
            if out not in fed:
                variable_slots[slot_of[out]] = slot_of[out]
        elif (opdef.forwards_ref and node.inputs and node.inputs[0] not in fed
              and split_tensor_name(node.inputs[0])[0] in ref_producers):
            ref_producers.add(node.name)
            source = slot_of[node.inputs[0]]
            if out not in fed and source in variable_slots:
                variable_slots[slot_of[out]] = variable_slots[source]

    steps = []
    blocking_nodes = set()
    fusable_ops = _fusable_op_types(device_type)
    for node in order:
        opdef = get_op_def(node.op)
        passes_ref = node.name in ref_producers and opdef.forwards_ref
        ins, reads = [], []
        for pos, inp in enumerate(node.inputs):
            slot = slot_of[inp]
            src = split_tensor_name(inp)[0]
            if (src in ref_producers and inp not in fed and pos not in opdef.ref_inputs
                    and not (passes_ref and pos == 0)):
                # One read per consumer, at the consumer's turn (never shared): inside its
                # kernel call, so no slot keeps the variable's array for the rest of the
                # step (a sparse update may then write a table in place); a deref step
                # for ops that fusion may merge (it works on slots).
                if node.op in fusable_ops:
                    steps.append(Step(_deref, (slot,), n_slots, 1, node))
                    slot = n_slots
                    n_slots += 1
                else:
                    reads.append(pos)
            ins.append(slot)
        try:
            kdef = kernel_registry.lookup(node.op, device_type, node.dtype_key)
        except errors.NotFoundError as e:
            raise errors.InvalidArgumentError(
                node.name, None, f"No OpKernel was registered to support Op '{node.op}' used by "
                f"node {node.name}: {e.message}") from None
        compute = kdef.factory(node)
        if reads:
            compute = _reading_variables(compute, tuple(reads))
        if kdef.blocking:
            blocking_nodes.add(node.name)
        out = slot_of.get(f"{node.name}:0", n_slots) if node.output_dtypes else 0
        steps.append(Step(compute, tuple(ins), out, len(node.output_dtypes), node))

    fetch_slots, fetch_is_ref = [], []
    for f in fetches:
        fetch_slots.append(slot_of[f])
        fetch_is_ref.append(f not in fed and split_tensor_name(f)[0] in ref_producers)
    # Fusion gives its groups back as (compute, ins, out, nout, node) tuples.
    steps = [st if isinstance(st, Step) else Step(*st)
             for st in fusion.fuse(steps, feed_slots, fetch_slots, device_type)]
    steps, constants = split_constants(_drop_unread_outputs(steps, fetch_slots),
                                       fold=device_type == "CPU", fetch_slots=fetch_slots,
                                       targets=targets)
    steps = _dropping_reads(steps, {st.out for st in steps if st.compute is _deref})
    return Plan(steps, n_slots, feed_slots, fetch_slots, fetch_is_ref, len(order), device,
                frozenset(blocking_nodes), constants, variable_slots)
