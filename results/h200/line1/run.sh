# Issue 33's first line with the stores deferred in 16-row boxes (this commit's default), and the skinny rows whose
# rule changed. Plans (built here, their gemm.mlir files deleted to keep the carry small):
#   pipelines bench --target sm_90a --suite results/h200/line1/suite.json --dtype bf16,f16 --pipelines hopper --compile-only -o .plans/l1
#   pipelines bench --target sm_90a --suite results/h200/line1/skinny.json --dtype bf16 --pipelines hopper --compile-only -o .plans/l1s
# On the GPU machine, from the repository root, with .plans/l1, .plans/l1s and .whl/ carried:
#   bash results/h200/line1/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 240 python3 -m pipelines.runner .plans/l1 --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "l1: runner stopped ($?)" >> $OUT/err.txt
cp .plans/l1/results.jsonl $OUT/l1.jsonl
for round in 0 1; do
  timeout 60 python3 -m pipelines.runner .plans/l1s --device cuda --repetitions 2 > /dev/null 2>> $OUT/err.txt \
    || echo "l1s round $round: runner stopped ($?)" >> $OUT/err.txt
  cat .plans/l1s/results.jsonl >> $OUT/l1s.jsonl && rm .plans/l1s/results.jsonl
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
