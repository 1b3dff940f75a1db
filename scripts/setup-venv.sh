#!/usr/bin/env bash
# Creates .venv (once) and installs mdae_fmu with its test extras into it.
# Re-running is cheap: pip is only called again when pyproject.toml changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
stamp="$venv/.mdae_fmu-installed"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install --quiet -e "$root[test]"
  touch "$stamp"
fi
# The package's bytecode, written next to the sources (ignored by git): an editable install
# compiles nothing, and where PYTHONDONTWRITEBYTECODE is set every command would compile the
# modules it imports again (about 0.2 s of CPU per command, docs/performance.md). compileall
# rewrites only the files that changed since the last run.
"$venv/bin/python" -m compileall -q "$root/mdae_fmu" >/dev/null
