# Run on 2026-11-28 (rows1/). The store-box probe (gen_rows.py): the
# runner on each variant in turn, two rounds (cuBLAS timed by the runner beside each problem). On the GPU machine,
# from the repository root, with .plans/rows (`python results/h200/square8192/gen_rows.py .plans/rows`) and .whl/
# carried:
#   bash results/h200/square8192/run_rows.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in 0 1; do
  for v in rows8r4 rows16r4 rows16r8; do
    timeout 150 python3 -m pipelines.runner .plans/rows/$v --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "$v round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/rows/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/rows/$v/results.jsonl
  done
done
