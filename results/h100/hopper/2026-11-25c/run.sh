# On the GPU machine, from the repo root, with the folder build.sh wrote carried along and the iree-base-runtime
# wheel in .whl/: all 14 problems in one run, one process per problem (each under a 100 s limit).
# Usage: bash results/h100/hopper/2026-11-25c/run.sh build/hopper-2026-11-25c
IN=${1:-build/hopper-2026-11-25c}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L > $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/gpu.txt
start=$(date +%s)
for d in $IN/p*/; do
  timeout 100 python3 results/h100/hopper/hopper_gemm.py run $d --repetitions 3 >> $OUT/rows.jsonl 2>>$OUT/err.txt || echo "$d timed out or failed" >> $OUT/err.txt
  echo "$d $(( $(date +%s) - start ))s" >> $OUT/progress.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
