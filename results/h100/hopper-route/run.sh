# On the GPU machine, from the repository root, with .plans/ (the plans `pipelines bench|tune --compile-only`
# wrote here, commands in README.md) and .whl/ (iree-base-runtime 3.13.0) carried along:
#   bash results/h100/hopper-route/run.sh "sq nt"          # the bench plans
#   bash results/h100/hopper-route/run.sh "t8nt t8nn tllm" # the tune plans
PLANS=${1:-sq nt}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/gpu.txt
start=$(date +%s)
for p in $PLANS; do
  timeout ${LIMIT_S:-280} python3 -m pipelines.runner .plans/$p --device cuda --repetitions ${REPS:-5} 2>> $OUT/err.txt \
    || echo "$p: runner stopped ($?)" >> $OUT/err.txt
  cp .plans/$p/results.jsonl $OUT/$p.jsonl
  echo "$p $(( $(date +%s) - start ))s" >> $OUT/progress.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
