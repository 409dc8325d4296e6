#!/usr/bin/env bash
# The README's test command: install the project and its test extra into .venv (if needed), then run lit
# and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/pipelines ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --upgrade pip
  .venv/bin/pip install --quiet -e ".[test]"
elif ! .venv/bin/python -c "import hypothesis, ruff, onnx, xdist" 2>/dev/null; then
  .venv/bin/pip install --quiet -e ".[test]"  # a .venv made by setup_and_compile.sh lacks the test extra
fi
.venv/bin/lit -sv tests/lit
.venv/bin/python -m pytest -q -n auto --dist worksteal tests/unit  # a pytest worker per core (pytest-xdist)
