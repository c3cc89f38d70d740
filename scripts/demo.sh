#!/usr/bin/env bash
# Install tidal into .venv and run its main job on the embedded engine.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
# the main job: a SQL query over a sample file, planned and run on the embedded engine
cd examples
../.venv/bin/tidal query "SELECT team, COUNT(*) AS goals, MIN(time) AS first_goal, MAX(time) AS last_goal
                         FROM 'goals.csv' GROUP BY team ORDER BY goals DESC" --format batch-table "$@"
