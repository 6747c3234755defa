"""Slurm's compact host and task lists, and the task layout both Slurm paths share.

Slurm hands a job its nodes as a hostlist (``SLURM_JOB_NODELIST=node[01-03,7],gpu5``) and
the tasks per node as a run-length list (``SLURM_STEP_TASKS_PER_NODE=3(x2),1``). The
expansion here is Slurm's: ranges keep the zero padding of their lower bound, the order is
kept and nothing is deduplicated; a name may hold several bracket groups (``r[1-2]n[1-2]``
gives r1n1, r1n2, r2n1, r2n2), as Slurm's own hostlist code allows.

``place_tasks`` is the layout of TF's SlurmClusterResolver, shared with ``dtf up --slurm``
so that both give the same addresses for the same allocation: hosts in sorted order, ports
``port_base + k`` for the k-th task on a host, and the jobs, sorted by name, taking
consecutive runs of that task list.

Only the standard library: the CLI loads this before numpy or zmq.
"""
from __future__ import annotations

import itertools
import re

__all__ = ["expand_hostlist", "expand_tasks_per_node", "place_tasks"]

_GROUP = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_RUN = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def _split_top_level(text: str, what: str):
    """Splits at commas outside brackets: 'n[1,3],m' -> ['n[1,3]', 'm']."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"{what}: nested '[' in {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"{what}: ']' without '[' in {text!r}")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    if depth:
        raise ValueError(f"{what}: '[' without ']' in {text!r}")
    parts.append(current)
    if any(not p.strip() for p in parts):
        raise ValueError(f"{what}: an empty name in {text!r}")
    return [p.strip() for p in parts]


def _expand_range_group(body: str, hostlist: str) -> list:
    """'01-03,7' -> ['01', '02', '03', '7'] (the width of each lower bound is kept)."""
    values = []
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if m is None:
            raise ValueError(f"Invalid hostlist {hostlist!r}: {item!r} in [{body}] is neither a "
                             "number nor a range like 1-3")
        low, high = m.group(1), m.group(2) if m.group(2) is not None else m.group(1)
        if int(high) < int(low):
            raise ValueError(f"Invalid hostlist {hostlist!r}: the range {item!r} runs backwards")
        values += [str(i).zfill(len(low)) for i in range(int(low), int(high) + 1)]
    return values


def expand_hostlist(hostlist: str) -> list:
    """'node[01-03,7],gpu5' -> ['node01', 'node02', 'node03', 'node7', 'gpu5']."""
    if not isinstance(hostlist, str) or not hostlist.strip():
        raise ValueError(f"Invalid hostlist {hostlist!r}: it names no host")
    hosts = []
    for part in _split_top_level(hostlist.strip(), f"Invalid hostlist {hostlist!r}"):
        pieces = _GROUP.split(part)  # [text, group, text, group, ..., text]
        choices = [[piece] if i % 2 == 0 else _expand_range_group(piece, hostlist)
                   for i, piece in enumerate(pieces)]
        hosts += ["".join(combo) for combo in itertools.product(*choices)]
    return hosts


def expand_tasks_per_node(tasks_per_node: str) -> list:
    """'3(x2),2,1' -> [3, 3, 2, 1]."""
    result = []
    for part in str(tasks_per_node).split(","):
        m = _RUN.match(part.strip())
        if m is None:
            raise ValueError(f"Invalid tasks-per-node list {tasks_per_node!r}: {part!r} is not "
                             "N or N(xR)")
        result += [int(m.group(1))] * int(m.group(2) or 1)
    return result


def place_tasks(jobs: dict, tasks_on_host: dict, port_base: int) -> dict:
    """{job: [host:port, ...]}: the hosts in sorted order, ``tasks_on_host[host]`` ports
    from ``port_base`` on each, and the jobs, sorted by name, taking consecutive runs.

    Raises ValueError when the jobs want more tasks than the hosts hold."""
    slots = [f"{host}:{port_base + k}" for host, count in sorted(tasks_on_host.items())
             for k in range(count)]
    wanted = sum(jobs.values())
    if wanted > len(slots):
        raise ValueError(f"the jobs ({', '.join(f'{j}: {n}' for j, n in sorted(jobs.items()))}) "
                         f"want {wanted} tasks but the nodes hold {len(slots)} "
                         f"({', '.join(f'{h}: {n}' for h, n in sorted(tasks_on_host.items()))})")
    out, start = {}, 0
    for job, count in sorted(jobs.items()):
        out[job] = slots[start:start + count]
        start += count
    return out
