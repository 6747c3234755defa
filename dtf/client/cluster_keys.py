"""Which cluster keys a session uses for its target, and why a target refuses it.

``dtf up`` serves encrypted (CURVE) with the key file in its state directory, and hands it
to the scripts ``dtf run`` starts through DTF_CLUSTER_KEYS. A script started by hand gets
no variable, so a session looks for the keys itself: it walks from the working directory
up to the first cluster.toml and, when that cluster is encrypted and lists the target's
address, uses its key file. Without keys that work, the target's task never answers, so
``refusal`` says at once what is wrong (encrypted, other keys, plain) and what to do,
instead of a wait that ends in "is its server running?".
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dtf.wire import handshake

ENV_KEYS = "DTF_CLUSTER_KEYS"  # as dtf.wire.security.ENV_KEYS
_CLUSTER_FILE = "cluster.toml"


@dataclass(frozen=True)
class KeyChoice:
    """The keys a client uses for one target: ``keys`` (a ClusterKeys, or None for plain),
    where they came from (for messages), and a key file that was found but is unusable."""

    keys: object = None
    source: str = ""
    problem: str = ""


def for_target(address: str) -> KeyChoice:
    """DTF_CLUSTER_KEYS when set; else the keys of the cluster.toml found from the working
    directory upwards, when it is encrypted, lists ``address`` and no plain task serves
    there; else none (plain)."""
    from dtf.wire.security import ClusterKeys, KeyFileError

    named = os.environ.get(ENV_KEYS)
    if named:
        return KeyChoice(ClusterKeys.load(named), f"{ENV_KEYS}={named}")
    config = _enclosing_cluster(address)
    if config is None:
        return KeyChoice()
    host, _, port = address.rpartition(":")
    if handshake.peer_mechanism(host, int(port)) == "NULL":
        # A plain task serves there now (servers started by hand with the classic flags in
        # the directory of a cluster that is down): not the encrypted cluster of the file.
        return KeyChoice()
    path = config.key_path
    if not path.exists():
        return KeyChoice(problem=f"{config.path} lists {address}, but its key file {path} does not "
                         "exist (no `dtf up` there yet?)")
    try:
        return KeyChoice(ClusterKeys.load(path), f"{path} (of {config.path})")
    except KeyFileError as e:
        return KeyChoice(problem=str(e))


def _enclosing_cluster(address: str):
    """The first cluster.toml from the working directory up, when it is encrypted and
    lists ``address``; None otherwise (also when it cannot be read)."""
    from dtf.cli import config as cluster_config

    here = Path.cwd()
    for directory in (here, *here.parents):
        candidate = directory / _CLUSTER_FILE
        if candidate.is_file():
            try:
                config = cluster_config.load(candidate)
            except cluster_config.ConfigError:
                return None
            if config.security.curve and config.has_address(address):
                return config
            return None
    return None


def refusal(address: str, choice: KeyChoice) -> str | None:
    """Why the task at ``address`` cannot answer a client with ``choice``'s keys, when its
    port tells (an encrypted task and no keys, other keys, or a plain one); None when it
    does not (nothing listens yet, or the handshake works and the task is just slow)."""
    from dtf.wire.transport import tcp_endpoint

    host, _, port = address.rpartition(":")
    mechanism = handshake.peer_mechanism(host, int(port))
    if mechanism == "CURVE" and choice.keys is None:
        return _encrypted_without_keys(address, choice)
    if mechanism == "NULL" and choice.keys is not None:
        return (f"The task at {address} serves unencrypted (plain mode), but this program uses "
                f"cluster keys ({choice.source}). Unset {ENV_KEYS}, or connect to the "
                "encrypted cluster those keys belong to.")
    if mechanism == "CURVE" and handshake.keys_accepted(tcp_endpoint(address), choice.keys) is False:
        return (f"The task at {address} is encrypted with other cluster keys than this "
                f"program's ({choice.source}): it refuses them. Use the key file of the cluster "
                f"that serves {address} (.dtf/cluster.key next to its cluster.toml), e.g. "
                f"`{ENV_KEYS}=/path/to/.dtf/cluster.key python script.py`, or start the script "
                "with `dtf run script.py` from that cluster's directory.")
    return None


def _encrypted_without_keys(address: str, choice: KeyChoice) -> str:
    found = f" ({choice.problem})" if choice.problem else ""
    return (f"The task at {address} is encrypted (a cluster started by `dtf up` serves with "
            f"CURVE keys) and this program has no keys for it{found}. Either start it with "
            "`dtf run script.py` in the directory of cluster.toml, or set "
            f"{ENV_KEYS} to the cluster's key file: `export {ENV_KEYS}=/path/to/.dtf/cluster.key` "
            "(.dtf/cluster.key next to cluster.toml, unless [security] keys names another). "
            "A script run by hand in or below the directory of cluster.toml finds it itself.")
