# On the GPU machine, from the repository root, with .plans/ (the plans and folders README.md's commands wrote here)
# and .whl/ (iree-base-runtime 3.13.0) carried along:
#   bash results/h100/hopper-epilogue/run.sh "ebf ef16"
PLANS=${1:-ebf ef16}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/gpu.txt
# `pipelines inspect --jit`'s module (the CLI itself needs the compiler, which this machine does not have)
for f in .plans/jit/*; do
  python3 -c 'import json, sys, pathlib; from pipelines.jit_resources import jit_resources; print(json.dumps(jit_resources(pathlib.Path(sys.argv[1]))))' $f \
    >> $OUT/jit.jsonl 2>> $OUT/err.txt
done
start=$(date +%s)
for p in $PLANS; do
  timeout ${LIMIT_S:-280} python3 -m pipelines.runner .plans/$p --device cuda --repetitions ${REPS:-5} 2>> $OUT/err.txt \
    || echo "$p: runner stopped ($?)" >> $OUT/err.txt
  cp .plans/$p/results.jsonl $OUT/$p.jsonl
  echo "$p $(( $(date +%s) - start ))s" >> $OUT/progress.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
