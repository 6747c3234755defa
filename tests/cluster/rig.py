"""Many hosts on one machine: each host a Linux network namespace.

A ``Rig`` of N hosts makes one namespace per host and one more that holds a bridge; each
host has a veth pair whose other end is a port of that bridge, its loopback up, and an
address 198.18.0.(i+1)/24 (198.18.0.0/15 is reserved for network benchmarks). The bridge
lives in the rig's own namespace, not the machine's, and no host has a default route: a
packet from a host reaches the other hosts of the rig or nothing.

Processes are started in a host with ``ip netns exec`` (the PID returned is the
process's own: ``ip`` execs it). By default each gets a private tmpfs on /dev/shm (``ip
netns exec`` gives the command its own mount namespace, slave to the machine's), so hosts
share no shared memory, like separate machines; the rest of the file system is shared.

Names carry a per-run prefix with the owner's PID (``dtfrig-<pid>-<random>-``);
``clean_stale()`` removes the namespaces of rigs whose owner is dead, and only those.
Where the kernel has sch_netem, ``apply_profile`` adds a latency/bandwidth profile.

Run by hand: ``python scripts/rig.py --help``.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess

import pytest

PREFIX = "dtfrig-"
SUBNET = "198.18.0"
HOST_IF = "eth0"
# name -> (one-way delay added on every host's egress, rate): an RTT between two hosts is
# twice the delay.
PROFILES = {
    "rtt0.2ms": ("0.1ms", "10gbit"),
    "rtt1ms": ("0.5ms", "10gbit"),
}


class RigUnavailable(RuntimeError):
    """Namespaces cannot be made here (not root, no ``ip``, EPERM); the reason says which."""


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if check and r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


def why_unavailable() -> str | None:
    """None where a rig can be made here, else the reason it cannot."""
    if not os.path.exists("/proc/self/ns/net"):
        return "no network namespaces (not Linux)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def list_namespaces() -> list:
    r = _ip("netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def clean_stale() -> list:
    """Deletes the namespaces of rigs whose owner process is dead; returns their names."""
    removed = []
    for ns in list_namespaces():
        if not ns.startswith(PREFIX):
            continue
        owner = ns[len(PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not _pid_alive(int(owner)):
            _kill_namespace_processes(ns)
            _ip("netns", "del", ns, check=False)
            removed.append(ns)
    return removed


def _kill_namespace_processes(ns: str):
    # Only namespaces this module made (their names carry its prefix) are ever emptied.
    r = _ip("netns", "pids", ns, check=False)
    for pid in (int(p) for p in r.stdout.split() if p.isdigit()):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Host:
    """One namespace of the rig: its name, address and how to start processes in it."""

    def __init__(self, ns: str, address: str):
        self.ns, self.address = ns, address

    def argv(self, argv, private_shm=True):
        if private_shm:
            argv = ["sh", "-c", 'mount -t tmpfs -o size=256m,mode=1777 rigshm /dev/shm && exec "$@"',
                    "sh", *argv]
        return ["ip", "netns", "exec", self.ns, *argv]

    def popen(self, argv, private_shm=True, **kwargs):
        return subprocess.Popen(self.argv(argv, private_shm), **kwargs)

    def run(self, argv, private_shm=True, timeout=60, **kwargs):
        return subprocess.run(self.argv(argv, private_shm), timeout=timeout, **kwargs)

    def link(self, up: bool):
        """Plugs the host's cable in or pulls it out."""
        _ip("-n", self.ns, "link", "set", HOST_IF, "up" if up else "down")

    def __repr__(self):
        return f"Host({self.ns}, {self.address})"


class Rig:
    """N hosts on a bridge of their own; ``close()`` (or the context) tears everything down."""

    def __init__(self, n_hosts: int):
        reason = why_unavailable()
        if reason:
            raise RigUnavailable(reason)
        if not 1 <= n_hosts <= 250:
            raise ValueError(f"n_hosts must be in 1..250, got {n_hosts}")
        self.prefix = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}-"
        self.bridge_ns = self.prefix + "br"
        self.hosts: list = []
        self._made: list = []
        self.profile = None
        try:
            self._build(n_hosts)
        except BaseException as e:
            self.close()
            if isinstance(e, RuntimeError) and ("Operation not permitted" in str(e)
                                                or "Permission denied" in str(e)):
                raise RigUnavailable(f"cannot make network namespaces: {e}") from None
            raise

    def _add_ns(self, name):
        _ip("netns", "add", name)
        self._made.append(name)

    def _build(self, n):
        self._add_ns(self.bridge_ns)
        _ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.bridge_ns, "link", "set", "br0", "up")
        for i in range(n):
            ns, port = f"{self.prefix}h{i}", f"h{i}"
            self._add_ns(ns)
            # Both ends are made directly in their namespaces: nothing lands in the machine's.
            _ip("link", "add", HOST_IF, "netns", ns, "type", "veth", "peer", "name", port,
                "netns", self.bridge_ns)
            _ip("-n", self.bridge_ns, "link", "set", port, "master", "br0", "up")
            address = f"{SUBNET}.{i + 1}"
            _ip("-n", ns, "addr", "add", f"{address}/24", "dev", HOST_IF)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", HOST_IF, "up")
            self.hosts.append(Host(ns, address))

    def netem_missing(self) -> str | None:
        """None where the kernel has sch_netem, else why the profiles cannot be used."""
        if shutil.which("tc") is None:
            return "no `tc` command"
        h = self.hosts[0]
        r = subprocess.run(["ip", "netns", "exec", h.ns, "tc", "qdisc", "add", "dev", HOST_IF,
                            "root", "netem", "delay", "0ms"], capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            return f"the kernel has no sch_netem ({r.stderr.strip()})"
        subprocess.run(["ip", "netns", "exec", h.ns, "tc", "qdisc", "del", "dev", HOST_IF, "root"],
                       capture_output=True, timeout=20)
        return None

    def apply_profile(self, name: str):
        """Adds the named latency/bandwidth profile (see PROFILES) on every host's link."""
        if name not in PROFILES:
            raise ValueError(f"unknown profile {name!r}; known: {sorted(PROFILES)}")
        missing = self.netem_missing()
        if missing:
            raise RigUnavailable(missing)
        delay, rate = PROFILES[name]
        for h in self.hosts:
            subprocess.run(["ip", "netns", "exec", h.ns, "tc", "qdisc", "replace", "dev", HOST_IF,
                            "root", "netem", "delay", delay, "rate", rate], check=True,
                           capture_output=True, timeout=20)
        self.profile = name

    def close(self):
        for ns in reversed(self._made):
            _kill_namespace_processes(ns)
            _ip("netns", "del", ns, check=False)
        self._made.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def make_rig():
    """``make_rig(n)`` -> a Rig of n hosts, torn down after the test (passed or failed);
    the test is skipped, with the reason, where namespaces cannot be made here."""
    made = []

    def make(n_hosts):
        clean_stale()
        try:
            r = Rig(n_hosts)
        except RigUnavailable as e:
            pytest.skip(f"no multi-host rig here: {e}")
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()
