"""A plan's steps: one kernel call each over the plan's value slots (see Step), the
traced call (``_invoke``) and the tf.errors a failing kernel becomes."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from dtf.framework import errors
from dtf.kernels.registry import WouldBlock
from dtf.state.resources import VariableResource


class Step:
    """One kernel call of a plan: ``compute(ctx, *inputs)`` reads the value slots ``ins``
    and its ``nout`` outputs go to the slots from ``out``; ``node`` is the NodeDef it runs.

    ``call(ctx, vals)`` is that call, the only place a kernel is called with its slots:
    built once per plan for the step's arity, so the loops that run steps do no unpacking
    or arity checks. Measured against the loops that inlined the call (unpacking a 5-tuple
    and branching on the input count per kernel): about 110 ns a kernel instead of 130
    (20 one- and two-input no-op kernels, Python 3.11).

    Fusion planning still reads steps as ``(compute, ins, out, nout, node)`` tuples, so a
    Step unpacks and indexes like one.

    ``keep=False`` (outputs nothing in the plan reads nor fetches): the call drops what the
    kernel returns instead of holding it in a slot until the step ends. A row update
    (ScatterSub, SparseApply*) returns its variable's whole array, and a slot holding it
    made the next concurrent update of that table, from another worker's step, copy it.

    ``drops``: input slots the call empties once the kernel has run (a variable's value
    read for this step alone, see executor.build_plan): an update that finds nothing else
    holding the variable's array may then write it in place.
    """

    __slots__ = ("compute", "ins", "out", "nout", "node", "call", "keep", "drops")

    def __init__(self, compute, ins, out, nout, node, keep=True, drops=()):
        self.compute = compute
        self.ins = ins
        self.out = out
        self.nout = nout
        self.node = node
        self.keep = keep
        self.drops = drops
        call = _slot_call(compute, ins, out, nout if keep else 0)
        if drops:
            call = _dropping(call, drops)
        self.call = call

    def failure(self, e, ctx, vals) -> errors.OpError:
        """``e`` raised by the kernel, as the tf.errors class naming the node and its inputs."""
        return _op_failure(e, self.node, [vals[i] for i in self.ins], ctx)

    def _fields(self):
        return (self.compute, self.ins, self.out, self.nout, self.node)

    def __iter__(self):
        return iter(self._fields())

    def __getitem__(self, i):
        return self._fields()[i]

    def __repr__(self):
        return f"Step({self.node.name} ({self.node.op}): {list(self.ins)} -> {self.out}+{self.nout})"


def _dropping(call, drops):
    def call_and_drop(ctx, vals):
        call(ctx, vals)
        for slot in drops:
            vals[slot] = None

    return call_and_drop


def _slot_call(compute, ins, out, nout):
    """``call(ctx, vals)``: runs ``compute`` on the slots ``ins`` into the slots from ``out``.
    Most kernels take none (constants), one or two inputs: passing those by name saves
    building a list (a comprehension is a frame of its own before Python 3.12)."""
    if nout == 1:
        if not ins:
            def call(ctx, vals):
                vals[out] = compute(ctx)
        elif len(ins) == 1:
            (a,) = ins

            def call(ctx, vals):
                vals[out] = compute(ctx, vals[a])
        elif len(ins) == 2:
            a, b = ins

            def call(ctx, vals):
                vals[out] = compute(ctx, vals[a], vals[b])
        else:
            def call(ctx, vals):
                vals[out] = compute(ctx, *[vals[i] for i in ins])
    elif nout == 0:
        def call(ctx, vals):
            compute(ctx, *[vals[i] for i in ins])
    else:
        end = out + nout

        def call(ctx, vals):
            vals[out:end] = compute(ctx, *[vals[i] for i in ins])
    return call


@dataclass
class NodeStat:
    node_name: str
    op: str
    all_start_micros: int
    op_end_rel_micros: int
    output_shapes: list


def _invoke(step, ctx, vals, stats=None):
    """Runs one step into ``vals``, timed into ``stats`` when given (traced runs, the
    inter-op pool); a kernel's error comes out as a tf.errors class naming the node, a
    WouldBlock as it is (the dataflow run parks the step)."""
    if stats is None:
        try:
            step.call(ctx, vals)
        except WouldBlock:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised as a tf.errors class
            raise step.failure(e, ctx, vals) from e
        return
    start = time.time()
    t0 = time.perf_counter()
    try:
        step.call(ctx, vals)
    except WouldBlock:
        raise
    except Exception as e:  # noqa: BLE001 - re-raised as a tf.errors class
        raise step.failure(e, ctx, vals) from e
    out, node = step.out, step.node
    shapes = [list(np.shape(vals[out + k])) for k in range(step.nout if step.keep else 0)
              if not isinstance(vals[out + k], VariableResource)]
    stats.append(NodeStat(node.name, node.op, int(start * 1e6),
                          int((time.perf_counter() - t0) * 1e6), shapes))


def _describe(v):
    if isinstance(v, VariableResource):
        return f"variable {v.name}"
    if isinstance(v, np.ndarray):
        return f"{v.dtype}{list(v.shape)}"
    return type(v).__name__


def _op_failure(e, node, inputs, ctx) -> errors.OpError:
    where = f" on {ctx.task}" if ctx.task else ""
    if isinstance(e, errors.OpError):
        if e.op is None and e.node_def is None and f'"{node.name}"' not in e.message:
            msg = f"{e.message}\n\t [[node {node.name} ({node.op}){where}]]"
            new = type(e)(node.name, None, msg)
            return new
        return e
    if isinstance(e, OSError):  # file I/O in a kernel: TF's class for the errno, path, OS message
        from dtf.framework import os_errors

        os_error = os_errors.from_os_error(e)
        return type(os_error)(node.name, None, f'{node.op} "{node.name}"{where}: {os_error.message}')
    shapes = ", ".join(_describe(v) for v in inputs)
    cls = errors.InvalidArgumentError
    if isinstance(e, MemoryError):
        cls = errors.ResourceExhaustedError
    elif isinstance(e, (NotImplementedError,)):
        cls = errors.UnimplementedError
    return cls(node.name, None, f'{node.op} "{node.name}"{where}: {e} (inputs: {shapes})')
