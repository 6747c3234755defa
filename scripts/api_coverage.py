"""Writes docs/api_coverage.md: every public TF1 name dtf defines (``tf.X``, ``tf.train.X``,
...), grouped by module, read from the code itself.

    python scripts/api_coverage.py           # regenerate docs/api_coverage.md
    python scripts/api_coverage.py --check   # exit 1 when the file is out of date

A name counts when ``import dtf as tf`` reaches it without a leading underscore and it is
dtf's own (a function, class or value defined in dtf, or a plain constant): modules that
dtf's namespaces merely import (numpy, logging's loggers) and dtf's internal packages (the
runtime, kernels, wire, CLI) are left out. tests/unit/test_api_coverage.py fails when the
file differs from what this script writes.
"""
from __future__ import annotations

import argparse
import inspect
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "api_coverage.md"

# Packages of dtf that are its machinery, not TF namespaces (they show up as attributes of
# ``dtf`` only because importing a submodule sets one on its parent).
_INTERNAL = {"cli", "client", "framework", "kernels", "ops", "partition", "placement", "runtime",
             "wire", "progress"}
# Namespaces that live inside another one, as in TF (tf.distribute.cluster_resolver,
# tf.contrib.layers). Inside a namespace, other modules are its implementation (tf.train's
# saver.py): add a nested namespace's name here when one is added.
_NESTED = {"cluster_resolver", "rnn_cell", "experimental", "queue_runner", "layers", "gfile",
           "rnn"}
_NESTED.add("inputs")  # tf.estimator.inputs
_NESTED |= {"export", "builder", "loader", "signature_constants", "signature_def_utils",
            "tag_constants", "utils"}  # tf.estimator.export, tf.saved_model.builder, ...
_CONSTANT_TYPES = (type(None), bool, int, float, str)


def _is_own(value) -> bool:
    if isinstance(value, _CONSTANT_TYPES):
        return True
    module = getattr(value, "__module__", None) if (callable(value) or inspect.isclass(value)) \
        else type(value).__module__
    return isinstance(module, str) and (module == "dtf" or module.startswith("dtf."))


def _kind(value) -> str:
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "constant"


def _public_names(module) -> list:
    names = set(getattr(module, "__all__", ())) or {n for n in dir(module) if not n.startswith("_")}
    if module.__name__ == "dtf":  # loaded on first use (PEP 562), so absent from dir()
        names |= set(module._LAZY_MODULES) | set(module._LAZY_NAMES)
    return sorted(names)


def _walk(module, path: str, out: dict, seen: set):
    """Fills ``out`` {"tf.train": [(name, kind)], ...} from ``module`` (reached as ``path``)."""
    if id(module) in seen:
        return
    seen.add(id(module))
    entries = out.setdefault(path, [])
    for name in _public_names(module):
        try:
            value = getattr(module, name)
        except AttributeError:
            continue
        if isinstance(value, types.ModuleType):
            nested = name not in _INTERNAL if path == "tf" else name in _NESTED
            if nested and value.__name__.startswith("dtf"):
                if value is sys.modules["dtf"]:  # tf.compat.v1 is tf itself
                    entries.append((name, "the tf namespace itself"))
                else:
                    _walk(value, f"{path}.{name}", out, seen)
            continue
        if _is_own(value):
            entries.append((name, _kind(value)))


def collect() -> dict:
    import dtf

    out: dict = {}
    _walk(dtf, "tf", out, set())
    # tf.compat.v1 is reached through dtf.compat's __getattr__ only, so dir() cannot see it.
    out.setdefault("tf.compat", []).append(("v1", "the tf namespace itself"))
    return {path: sorted(set(entries)) for path, entries in sorted(out.items()) if entries}


def render(modules: dict) -> str:
    total = sum(len(entries) for entries in modules.values())
    lines = [
        "# TF1 API coverage",
        "",
        "Every public TF1 name that dtf defines, by module: look a name up here before porting a",
        "program (`tf.X` in TensorFlow 1.x is `X` below under `tf`, and so on). A name listed here",
        "works as in TensorFlow 1.15; an argument dtf does not support raises an error naming it.",
        "",
        "Generated from the code by `python scripts/api_coverage.py`; do not edit by hand (a test",
        "fails when this file is out of date: run that command again).",
        "",
        f"{total} names in {len(modules)} modules: "
        + ", ".join(f"[`{path}`](#{path.replace('.', '')}) ({len(e)})" for path, e in modules.items()) + ".",
    ]
    for path, entries in modules.items():
        lines += ["", f"## {path}", "", "| name | kind |", "|---|---|"]
        lines += [f"| `{path}.{name}` | {kind} |" for name, kind in entries]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is out of date")
    args = parser.parse_args(argv)
    text = render(collect())
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(REPO)} is out of date: run python scripts/api_coverage.py")
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
