# NEXT (not run: written when this session's device time was spent). The deferred-stores probe (gen_defer.py): the
# runner on each variant in turn, two rounds, cuBLAS beside each problem; then the workgroup timeline of deferred
# stores needs ../prologue/gen.py to build them (not done). On the GPU machine, from the repository root, with
# .plans/defer (`python results/h200/square8192/gen_defer.py .plans/defer`) and .whl/ carried:
#   bash results/h200/square8192/run_defer.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in 0 1; do
  for v in shipped defer defer16; do
    timeout 150 python3 -m pipelines.runner .plans/defer/$v --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "$v round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/defer/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/defer/$v/results.jsonl
  done
done
