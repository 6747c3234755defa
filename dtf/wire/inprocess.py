"""The in-process backend: tasks this process serves, reached by direct calls.

A task reached through this backend gets the caller's message dict itself (nothing is
encoded) and handles it on the caller's thread. Which backend reaches a task is chosen
once per task by the runtime (dtf.runtime.routes), from this registry, and chosen again
only when a task of this process starts or stops (``Registry.generation`` changes).
"""
from __future__ import annotations

import threading


def normalize_address(address: str) -> str:
    """'localhost:5000', ':5000' and '0.0.0.0:5000' all name 127.0.0.1:5000 here."""
    normal = _normal_addresses.get(address)
    if normal is None:  # kept per address: every call to an in-process master asks
        host, _, port = address.rpartition(":")
        if host in ("localhost", "", "0.0.0.0"):
            host = "127.0.0.1"
        normal = f"{host}:{port}"
        if len(_normal_addresses) < 4096:
            _normal_addresses[address] = normal
    return normal


_normal_addresses: dict = {}


class Registry:
    """The services living in this process, by normalised address."""

    def __init__(self):
        self._services: dict = {}
        self._lock = threading.Lock()
        # Bumped after every change: whoever keeps a choice of backend per task (Peers)
        # compares it with the one its choices were made under.
        self.generation = 0

    def register(self, address: str, service):
        with self._lock:
            self._services[normalize_address(address)] = service
            self.generation += 1

    def unregister(self, address: str, service):
        """Drops ``service`` if it is still the one registered at ``address``."""
        with self._lock:
            key = normalize_address(address)
            if self._services.get(key) is service:
                del self._services[key]
                self.generation += 1

    def lookup(self, address: str):
        """The service at ``address`` when it lives in this process, else None."""
        return self._services.get(normalize_address(address))


REGISTRY = Registry()
