"""Clusters inside a Slurm allocation: ``[slurm]`` in cluster.toml and ``dtf up --slurm``.

In a Slurm cluster.toml the jobs are task counts (``ps = 1``, ``worker = 2``); the addresses
come from the allocation: the nodes of ``SLURM_JOB_NODELIST`` in sorted order,
``tasks_per_node`` tasks on each (default: the tasks spread evenly over the nodes) on ports
``port_base``, ``port_base + 1``, ..., and the jobs, sorted by name, filling those slots in
turn (SlurmClusterResolver's layout). Only SLURM_JOB_NODELIST is read, which every shell
and job step of the allocation sees alike, so ``dtf up``, ``dtf status``, ``dtf run`` and
each task's own ``dtf server`` resolve the same addresses.

Each task is started as its own job step, ``srun --nodes=1 --ntasks=1 --nodelist=NODE
--overlap ... python -m dtf server``, its srun process (here) writing the task's output to
the task's log and holding its pid record: ``dtf down`` signals srun, which passes SIGTERM
to the task. The cluster.toml and the key file must be on a file system the nodes share
(as home directories are on Slurm clusters).
"""
from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field

SECTION_KEYS = ("port_base", "tasks_per_node", "srun", "srun_options")
NODELIST_ENV = "SLURM_JOB_NODELIST"


@dataclass(frozen=True)
class SlurmSettings:
    port_base: int = 8888
    tasks_per_node: int | None = None  # None: the tasks spread evenly over the nodes
    srun: str = "srun"
    srun_options: tuple = field(default_factory=tuple)


def parse_section(section: dict, error) -> SlurmSettings:
    """[slurm] -> SlurmSettings; ``error(message, key)`` raises the ConfigError."""
    unknown = sorted(set(section) - set(SECTION_KEYS))
    if unknown:
        error(f"unknown key {unknown[0]!r} in [slurm]; the known keys are {', '.join(SECTION_KEYS)}",
              unknown[0])
    out = {}
    for key in ("port_base", "tasks_per_node"):
        if key in section:
            value = section[key]
            low = 1 if key == "tasks_per_node" else 1024
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 65535:
                error(f"[slurm] {key} must be a whole number {low}..65535, not {value!r}", key)
            out[key] = value
    if "srun" in section:
        if not isinstance(section["srun"], str) or not section["srun"]:
            error(f"[slurm] srun must be the srun command's path, not {section['srun']!r}", "srun")
        out["srun"] = section["srun"]
    if "srun_options" in section:
        options = section["srun_options"]
        if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
            error(f"[slurm] srun_options must be a list of strings, e.g. [\"--partition=gpu\"], "
                  f"not {options!r}", "srun_options")
        out["srun_options"] = tuple(options)
    return SlurmSettings(**out)


def allocation_nodes() -> list:
    """The allocation's nodes, in SLURM_JOB_NODELIST's order; ValueError outside one."""
    from dtf.distribute.slurm_hostlist import expand_hostlist

    nodelist = os.environ.get(NODELIST_ENV, "")
    if not nodelist.strip():
        raise ValueError(f"{NODELIST_ENV} is not set: the tasks' addresses come from a Slurm "
                         "allocation. Run this inside one (salloc, or an sbatch script), or list "
                         'each job\'s addresses, e.g. worker = ["node1:2222"]')
    return expand_hostlist(nodelist)


def resolve_addresses(counts: dict, settings: SlurmSettings) -> dict:
    """{job: task count} -> {job: [node:port, ...]} in this allocation (ValueError: why not)."""
    from dtf.distribute.slurm_hostlist import place_tasks

    nodes = sorted(set(allocation_nodes()))
    total = sum(counts.values())
    per_node = settings.tasks_per_node or math.ceil(total / len(nodes))
    return place_tasks(counts, {node: per_node for node in nodes}, settings.port_base)


def check_launch(config):
    """Why srun cannot start this cluster's tasks here (None when it can)."""
    if not os.environ.get("SLURM_JOB_ID"):
        return ("not inside a Slurm allocation (SLURM_JOB_ID is not set): run `dtf up --slurm` "
                "in salloc or in an sbatch script")
    if shutil.which(config.slurm.srun) is None:
        return f"the srun command {config.slurm.srun!r} is not on PATH ([slurm] srun names it)"
    try:
        nodes = set(allocation_nodes())
    except ValueError as e:
        return str(e)
    outside = [t for t in config.tasks() if t.host not in nodes]
    if outside:
        return ("these tasks are on hosts that are not nodes of this allocation "
                f"({os.environ.get(NODELIST_ENV)}): "
                + ", ".join(f"{t.name} ({t.address})" for t in outside))
    return None


def srun_command(config, task) -> list:
    from dtf.cli.launch import server_command

    return [config.slurm.srun, "--nodes=1", "--ntasks=1", f"--nodelist={task.host}",
            # --overlap: the tasks share the allocation's CPUs with each other and with the
            # steps the user starts later (a step would otherwise wait for free CPUs).
            "--overlap", f"--job-name=dtf-{task.job}-{task.index}", "--kill-on-bad-exit=1",
            *config.slurm.srun_options, *server_command(config, task)]
