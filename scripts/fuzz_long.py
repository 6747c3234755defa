"""The CI fuzz properties (tests/unit/test_fuzz_wire.py, tests/cluster/test_fuzz_server.py)
run for longer, with fresh random seeds each round:

    .venv/bin/python scripts/fuzz_long.py --seconds 600
    .venv/bin/python scripts/fuzz_long.py --seconds 120 --only wire

Exits non-zero on the first failing property, after hypothesis prints the example.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.cluster import test_fuzz_server as server  # noqa: E402
from tests.unit import test_fuzz_wire as wire  # noqa: E402

ROUND = settings(max_examples=200, deadline=10_000, database=None, derandomize=False,
                 suppress_health_check=list(HealthCheck))


def wire_properties():
    return [("decode random frames", (st.lists(wire._frame, max_size=5),),
             lambda frames: wire.check_decode(frames)),
            ("decode random headers", (wire.headers, st.lists(wire._frame, max_size=4)),
             lambda header, frames: wire.check_decode([wire._json_frame(header)] + frames)),
            ("decode mutated messages", (st.integers(0, 2**32 - 1), st.data()),
             lambda seed, data: wire.check_mutated(seed, data))]


def server_properties(fuzzer):
    return [("serve random frames", (st.lists(wire._frame, min_size=1, max_size=4),),
             lambda frames: fuzzer.check(frames)),
            ("serve random requests", (server.requests, st.lists(wire._frame, max_size=2)),
             lambda header, frames: server.check_request(fuzzer, header, frames)),
            ("serve mutated requests", (st.integers(0, 2**32 - 1), st.sampled_from(server.TYPES), st.data()),
             lambda seed, mtype, data: server.check_mutated_request(fuzzer, seed, mtype, data))]


def run_for(seconds, name, strategies, check):
    """Rounds of ``ROUND.max_examples`` fresh examples until ``seconds`` have passed.
    ``check`` takes one named parameter per strategy (as ``given`` requires)."""
    test = given(*strategies)(ROUND(check))
    end = time.monotonic() + seconds
    rounds = 0
    while rounds == 0 or time.monotonic() < end:
        test()
        rounds += 1
    print(f"  {name}: {rounds * ROUND.max_examples} examples in {seconds:.0f} s", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=300, help="total time, shared by the properties")
    p.add_argument("--only", choices=["wire", "server"], help="fuzz only the decoder or the server")
    args = p.parse_args(argv)
    logging.disable(logging.CRITICAL)  # every refused message is logged
    groups = [g for g in ("wire", "server") if args.only in (None, g)]
    share = args.seconds / (3 * len(groups))
    if "wire" in groups:
        print("wire decoding:", flush=True)
        for name, strategies, check in wire_properties():
            run_for(share, name, strategies, check)
    if "server" in groups:
        print("task message handling:", flush=True)
        task = server.start_task()
        fuzzer = server.Fuzzer(task.address)
        try:
            for name, strategies, check in server_properties(fuzzer):
                run_for(share, name, strategies, check)
            server.check_still_serves(task, fuzzer)
            server.check_bounded(task)
            print(f"  afterwards: pings and a session step answered, "
                  f"{task.status()['messages']} messages served", flush=True)
        finally:
            fuzzer.sock.close(0)
            task.stop()
    print("no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
