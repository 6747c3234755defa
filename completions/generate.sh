#!/usr/bin/env bash
# Regenerates the shell completion scripts of `dtf` (bash, zsh, fish) from the CLI itself.
# Usage: completions/generate.sh [OUTPUT_DIR]   (default: this directory)
# The interpreter is $PYTHON, else `python`; it must be able to `import dtf`.
set -euo pipefail
out="${1:-$(dirname "$0")}"
python="${PYTHON:-python}"
_DTF_COMPLETE=source_bash "$python" -m dtf > "$out/dtf.bash"
_DTF_COMPLETE=source_zsh "$python" -m dtf > "$out/_dtf"
_DTF_COMPLETE=source_fish "$python" -m dtf > "$out/dtf.fish"
