#!/usr/bin/env bash
# Quick start, second command: set up, then run the whole test suite.
# System requirement: SUNDIALS CVODE static libraries (Debian: libsundials-dev) for the
# Co-Simulation FMUs; installed here with apt-get when running as root. Without root and
# without SUNDIALS the suite still runs: the Co-Simulation tests (marker requires_sundials)
# are skipped and listed in a red banner at the end. With MDAE_REQUIRE_SUNDIALS=1 (CI, see
# .ci/run) a missing SUNDIALS is an error instead: this script stops, and the tests fail.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if ! bash "$root/scripts/install-system-deps.sh"; then
  if [ "${MDAE_REQUIRE_SUNDIALS:-0}" = 1 ]; then
    echo "test.sh: MDAE_REQUIRE_SUNDIALS=1 and the system packages could not be installed" >&2
    exit 1
  fi
  echo "test.sh: WARNING: system packages missing (above); the Co-Simulation tests (no" \
    "SUNDIALS) or the HTML report tests (no chromium) will be SKIPPED" >&2
fi
"$root/scripts/setup-venv.sh"
cd "$root"
# The whole suite, `slow` tests included (issue 27: CI runs them); a developer's inner loop
# passes a selection: -m quick (no FMU built), -m "not slow" (docs/testing.md).
# Bytecode: with PYTHONDONTWRITEBYTECODE set, every worker and every CLI subprocess compiles
# the package and pytest rewrites the asserts of every test module again (a worker collects
# -m quick in 16 s of CPU, in 8.5 s with its bytecode kept: docs/testing.md); the bytecode is
# then kept in the venv instead (PYTHONPYCACHEPREFIX), out of the source tree.
if [ -n "${PYTHONDONTWRITEBYTECODE:-}" ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$root/.venv/pycache}"
fi
# one worker per core (pytest-xdist); tests are handed out as workers free up
exec "$root/.venv/bin/python" -m pytest -q -n auto --dist worksteal "$@"
