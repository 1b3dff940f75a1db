#!/usr/bin/env bash
# Quick start, first command: set up, then run the main job on the bundled ideal clutch:
# the structural report (modes and mode changes), then export the FMU, simulate it 0..10 s
# with FMPy and write out/ClutchBasic.csv and out/ClutchBasic.png.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-venv.sh"
mkdir -p "$root/out"
"$root/.venv/bin/mdae-fmu" analyze "$root/reference_models/ClutchBasic.mo"
echo
cd "$root/out"
exec "$root/.venv/bin/mdae-fmu" simulate "$root/reference_models/ClutchBasic.mo" \
  --stop-time 10 --output-file ClutchBasic.csv --plot ClutchBasic.png
