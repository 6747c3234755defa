"""The cluster's security as the commands apply it: which key file tasks and clients use.

In curve mode (the default) the tasks ``dtf up`` starts, the scripts ``dtf run`` starts and
the requests the CLI itself sends all use the cluster's key file, named by DTF_CLUSTER_KEYS
in this process's environment (which the processes we start inherit, and which
``transport.Client()`` reads). In plain mode the variable is removed, so a value inherited
from the shell cannot turn a plain cluster's clients into CURVE ones.
"""
from __future__ import annotations

import os
from pathlib import Path

from rich.markup import escape

from dtf.cli.config import ENV_KEYS, is_loopback
from dtf.cli.console import fail


def prepare_launch(cfg) -> Path | None:
    """For commands that may start tasks: refuses plain mode on non-loopback addresses (before
    any network use), creates the default key file on first use, and uses the keys.

    Returns the key file, or None in plain mode."""
    _refuse_plain_remote(cfg)
    if cfg.security.curve and cfg.security.keys is None:
        _create(cfg.key_path)
    return _activate(cfg, required=True)


def prepare_client(cfg) -> Path | None:
    """For commands that only talk to tasks: the cluster's keys once there are any (a
    default key file that no `dtf up` created yet means its tasks cannot be ours)."""
    return _activate(cfg, required=cfg.security.keys is not None)


def describe(key_file) -> str:
    if key_file is None:
        return "plain (unencrypted)"
    return f"encrypted (CURVE, keys {_short(key_file)})"


def _short(path) -> str:
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _refuse_plain_remote(cfg):
    if cfg.security.curve or cfg.security.allow_plain_remote:
        return
    remote = [t for t in cfg.tasks() if not is_loopback(t.host)]
    if remote:
        names = ", ".join(f"{t.name} ({t.address})" for t in remote)
        fail(escape(
            f"{cfg.path}: [security] mode = \"plain\" would serve these tasks unencrypted to "
            f"anyone who can reach them: {names}. Nothing was started. Use mode = \"curve\" (the "
            "default), or put allow_plain_remote = true in [security] to accept that anyone on "
            "that network may run any graph on them and read their traffic."), 2)


def _create(path: Path):
    """Generates the key file (0600, in a 0700 directory) unless it exists."""
    if path.exists():
        return
    from dtf.wire.security import ClusterKeys

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    ClusterKeys.generate().save(draft)
    try:
        os.link(draft, path)  # never replaces the keys another command created meanwhile
    except FileExistsError:
        pass
    finally:
        draft.unlink()


def _activate(cfg, required: bool) -> Path | None:
    """Points DTF_CLUSTER_KEYS at the cluster's key file (checked), or removes it."""
    path = cfg.key_path
    if not cfg.security.curve or (not required and not path.exists()):
        os.environ.pop(ENV_KEYS, None)
        return None
    from dtf.wire.security import ClusterKeys, KeyFileError

    try:
        ClusterKeys.load(path)
    except KeyFileError as e:
        named = f" (named by [security] keys in {cfg.path})" if cfg.security.keys else ""
        fail(escape(f"{e}{named}"), 2)
    os.environ[ENV_KEYS] = str(path)
    return path
