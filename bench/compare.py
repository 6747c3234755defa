"""Two builds of dtf side by side: ``python -m bench.compare OTHER_CHECKOUT [--only W2,W4]
[--rounds 10]``.

Starts one probe process (bench/probe.py) in this checkout and one in OTHER_CHECKOUT (for
example a ``git worktree`` of the commit before a change), warms both up, then alternates
their rounds of the same in-process workloads, changing which goes first every round. For
each metric it prints both medians, the median of the per-round ratios (this build over
the other) and in how many rounds this build was better. On a small shared machine whose
speed drifts by tens of percent within minutes, paired rounds are what makes a 5-10%
change visible at all.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

from bench.metrics import BY_ID
from bench.probe_client import ProbeClient
from bench.run import IN_PROCESS as _SINGLE, MODELS

IN_PROCESS = _SINGLE + MODELS  # every in-process workload, model steps included


def compare(other, workloads, rounds, quick=True):
    """{metric id: (this build's samples, the other's samples)}, rounds paired."""
    probes = {"this": ProbeClient("dtf", sys.executable),
              "other": ProbeClient("dtf", sys.executable, checkout=other)}
    samples = {"this": {}, "other": {}}

    def round_of(name, workload):
        reply = probes[name].request({"workload": workload, "quick": quick})
        if not reply.get("ok"):
            raise RuntimeError(f"{workload} failed in {name} build: {reply.get('error')}")
        return reply["metrics"]

    try:
        for w in workloads:  # first rounds build graphs and warm up: not counted
            for name in probes:
                round_of(name, w)
        for r in range(rounds):
            order = ("this", "other") if r % 2 == 0 else ("other", "this")
            for name in order:
                for w in workloads:
                    for key, value in round_of(name, w).items():
                        samples[name].setdefault(key, []).append(value)
    finally:
        for p in probes.values():
            p.close()
    return {k: (samples["this"][k], samples["other"].get(k, [])) for k in samples["this"]}


def report(results) -> str:
    lines = [f"{'metric':<40} {'this':>10} {'other':>10} {'this/other':>11} {'this better':>12}"]
    for key, (mine, theirs) in results.items():
        if not mine or len(mine) != len(theirs):
            continue
        ratios = [a / b for a, b in zip(mine, theirs) if b]
        higher = BY_ID[key].higher_is_better if key in BY_ID else False
        better = sum((a > b) if higher else (a < b) for a, b in zip(mine, theirs))
        lines.append(f"{key:<40} {statistics.median(mine):>10.4g} {statistics.median(theirs):>10.4g} "
                     f"{statistics.median(ratios):>10.3f}x {better:>8}/{len(mine)}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("other", help="another checkout of dtf (e.g. a git worktree)")
    p.add_argument("--only", default="W2,W4", help=f"comma-separated subset of {','.join(IN_PROCESS)}")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--full", action="store_true", help="full-length rounds instead of quick ones")
    args = p.parse_args(argv)
    workloads = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = set(workloads) - set(IN_PROCESS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; choose from {', '.join(IN_PROCESS)}")
    other = os.path.abspath(args.other)
    if not os.path.isdir(os.path.join(other, "dtf")):
        p.error(f"{other} is not a dtf checkout (no dtf/ in it)")
    print(report(compare(other, workloads, args.rounds, quick=not args.full)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
