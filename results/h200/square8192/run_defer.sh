# Run on 2026-11-28 (defer1/). The deferred-stores probe (gen_defer.py): the
# runner on each variant in turn, two rounds, cuBLAS beside each problem; then the workgroup timelines of the
# shipped and the deferred stores (`python results/h200/prologue/gen.py .plans/pro42 4 2` and `... .plans/prod 4 2
# defer`). On the GPU machine, from the repository root, with .plans/defer (`python
# results/h200/square8192/gen_defer.py .plans/defer`), .plans/pro42, .plans/prod and .whl/ carried:
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
for p in pro42 prod; do
  timeout 100 python3 results/h200/prologue/timeline.py .plans/$p > $OUT/timeline_$p.jsonl 2>> $OUT/err.txt \
    || echo "timeline $p stopped ($?)" >> $OUT/err.txt
done
