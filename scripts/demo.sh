#!/usr/bin/env bash
# Install tidal into .venv and run its main job on the embedded engine.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
.venv/bin/tidal demo "$@"
