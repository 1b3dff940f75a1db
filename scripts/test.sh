#!/usr/bin/env bash
# Quick start, second command: set up, then run the whole test suite.
# System requirement: SUNDIALS CVODE static libraries (Debian: libsundials-dev) for the
# Co-Simulation FMUs; installed here with apt-get when running as root.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-system-deps.sh"
"$root/scripts/setup-venv.sh"
cd "$root"
exec "$root/.venv/bin/python" -m pytest -q "$@"
