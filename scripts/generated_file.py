"""The command line both generated indexes share (registry_index.py, api_index.py): write the
file, or with --check say how it differs and exit 1, so a test can demand it is current."""
import argparse
import difflib


def write_or_check(target, render, description, source, argv=None):
    """``render()`` gives the file's text; ``source`` names what it is generated from."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--check", action="store_true",
                    help=f"exit 1 if the file is not what {source} gives")
    args = ap.parse_args(argv)
    text = render()
    current = target.read_text() if target.exists() else ""
    if not args.check:
        target.write_text(text)
        return 0
    if text == current:
        return 0
    diff = difflib.unified_diff(current.splitlines(), text.splitlines(), f"{target.name} (file)",
                                f"{target.name} ({source})", lineterm="", n=1)
    print("\n".join(list(diff)[:80]))
    print(f"stale: run python scripts/{target.name}")
    return 1
