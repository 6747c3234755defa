"""A multi-host rig on this machine: N network namespaces on a bridge of their own (root).

    sudo python scripts/rig.py up 3                  # make 3 hosts, print them, wait for Ctrl-C
    sudo python scripts/rig.py up 3 --profile rtt1ms # with 1 ms RTT between hosts (sch_netem)
    sudo python scripts/rig.py clean                 # remove rigs whose owner process died

While it waits, start processes on a host with the printed ``ip netns exec NS ...``; Ctrl-C
(or SIGTERM) stops every process left in the rig's namespaces and removes them. Hosts are
198.18.0.1, 198.18.0.2, ...; they reach each other and nothing else. See docs/multihost.md.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cluster import rig  # noqa: E402


def up(n_hosts: int, profile: str | None) -> int:
    removed = rig.clean_stale()
    if removed:
        print(f"removed stale namespaces: {', '.join(removed)}")
    try:
        r = rig.Rig(n_hosts)
    except rig.RigUnavailable as e:
        print(f"cannot make a rig here: {e}", file=sys.stderr)
        return 2
    with r:
        if profile:
            try:
                r.apply_profile(profile)
            except rig.RigUnavailable as e:
                print(f"profile {profile} not applied: {e}", file=sys.stderr)
        print(f"rig {r.prefix} (bridge in namespace {r.bridge_ns}, profile {r.profile or 'none'}):")
        for h in r.hosts:
            print(f"  {h.address:<12} ip netns exec {h.ns} COMMAND")
        print("Ctrl-C tears it down.", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    u = sub.add_parser("up", help="make N hosts and wait for Ctrl-C")
    u.add_argument("hosts", type=int)
    u.add_argument("--profile", choices=sorted(rig.PROFILES), help="latency/bandwidth profile (needs sch_netem)")
    sub.add_parser("clean", help="remove the namespaces of rigs whose owner process is dead")
    flags = p.parse_args(argv)
    if flags.command == "up":
        return up(flags.hosts, flags.profile)
    removed = rig.clean_stale()
    print(f"removed: {', '.join(removed)}" if removed else "no stale rig")
    return 0


if __name__ == "__main__":
    sys.exit(main())
