"""One implementation's measuring process: ``python -m bench.probe --impl dtf|tf``.

Reads one JSON command per line on stdin ({"workload": "W2", "quick": false} or
{"quit": true}); answers each with one line ``@@RESULT {json}`` on stdout. Graphs,
sessions and the cluster are built on a workload's first round and kept for the next ones,
so the driver can interleave rounds of dtf and TensorFlow without paying start-up again.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

RESULT = "@@RESULT "


def reply(obj):
    sys.stdout.write(RESULT + json.dumps(obj) + "\n")
    sys.stdout.flush()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", choices=("dtf", "tf"), required=True)
    args = p.parse_args(argv)
    from bench import workloads
    from bench.impl import load, version

    tf = load(args.impl)
    env = workloads.Env(args.impl, tf)
    measures: dict = {}
    reply({"ready": True, "version": version(args.impl)})
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd.get("quit"):
                break
            name = cmd["workload"]
            try:
                t0 = time.perf_counter()
                setup_s = None
                if name not in measures:
                    measures[name] = workloads.SETUPS[name](tf, env)
                    setup_s = time.perf_counter() - t0
                metrics = measures[name](bool(cmd.get("quick")))
                reply({"ok": True, "metrics": metrics, "setup_s": setup_s})
            except Exception as e:  # noqa: BLE001 - reported to the driver, which goes on
                reply({"ok": False, "error": f"{type(e).__name__}: {e}",
                       "traceback": traceback.format_exc()[-4000:]})
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
