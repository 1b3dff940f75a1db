#!/usr/bin/env bash
# Quick start, first command: set up, then run the main job on the bundled ideal clutch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup-venv.sh"
mkdir -p "$root/out"
exec "$root/.venv/bin/mdae-fmu" analyze "$root/reference_models/ClutchBasic.mo"
