#!/usr/bin/env bash
# Install tidal into .venv and run its main job on the embedded engine.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
# the main job (tidal/cli/demo.py): generated ad clicks arriving out of order, sorted under a reorder
# latency, joined with each ad's price at the click's time, spend per ad per minute, late clicks counted
.venv/bin/tidal demo "$@"
