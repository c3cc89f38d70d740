#!/usr/bin/env bash
# Install tidal with its benchmark peers into .venv and run the benchmark suite.
#   bash scripts/bench.sh --quick     # under 5 minutes: small data, Bytewax only if its env exists
#   bash scripts/bench.sh             # full: 10M-20M events; creates bench/.envs/{bytewax,pyflink}
# The report lands in bench/results/<timestamp>/REPORT.md and bench/results/latest/.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[bench,spark]'
.venv/bin/python bench/suite.py "$@"
