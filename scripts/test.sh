#!/usr/bin/env bash
# Quick start, second command: set up, then run the whole test suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-venv.sh"
cd "$root"
exec "$root/.venv/bin/python" -m pytest -q "$@"
