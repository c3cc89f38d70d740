#!/usr/bin/env bash
# Install tidal with its test dependencies into .venv, lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
.venv/bin/ruff check tidal tests bench
bash scripts/services.sh   # PostgreSQL and Redis for tests/connectors (they skip, saying why, without them)
.venv/bin/python -m pytest "$@"
