#!/usr/bin/env bash
# The README's test command: install the project into .venv (if needed), then run lit and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/pipelines ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e .
fi
.venv/bin/lit -sv tests/lit
.venv/bin/python -m pytest -q tests/unit
