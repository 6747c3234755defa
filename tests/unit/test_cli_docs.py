"""docs/cli.md documents every DTF_* environment variable the code reads."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Names in the code that are not variables a user sets (prefixes of others, test markers,
# dtf.version.DTF_VERSION, the release string).
_NOT_SETTINGS = {"DTF_TEST_MARKER", "DTF_VERSION"}


def _table_rows(text: str) -> set:
    section = text.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(DTF_[A-Z0-9_]+)` \|", section, re.M))


def test_every_dtf_variable_in_the_code_is_in_the_table_of_docs_cli():
    used = set()
    for path in (REPO / "dtf").rglob("*.py"):
        used |= set(re.findall(r"\bDTF_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    documented = _table_rows((REPO / "docs" / "cli.md").read_text(encoding="utf-8"))
    missing = sorted(used - documented - _NOT_SETTINGS)
    assert not missing, f"add these to the table under '## Environment variables' in docs/cli.md: {missing}"
    assert not sorted(documented - used), "documented but no longer read by the code"
