#!/usr/bin/env bash
# The README's first command: install the project into .venv, compile a bf16 GEMM for gfx942 and print its report.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e .
.venv/bin/pipelines compile --target gfx942 --shape 4096x4096x4096 --dtype bf16 --layout nt --pipeline tuned \
  -o out/gemm_gfx942
