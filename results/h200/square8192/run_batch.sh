# The store-batch probe (gen_batch.py) and the workgroup timelines of the shipped stores and of batches of 4 blocks
# in a ring of 8 (../prologue/gen.py .plans/pro, and .plans/pro84 8 4). On the GPU machine, from the repository
# root, with .plans/sb, .plans/pro, .plans/pro84 and .whl/ carried:
#   bash results/h200/square8192/run_batch.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for p in pro pro84; do
  timeout 100 python3 results/h200/prologue/timeline.py .plans/$p > $OUT/timeline_$p.jsonl 2>> $OUT/err.txt \
    || echo "timeline $p stopped ($?)" >> $OUT/err.txt
done
for round in 0 1; do
  for v in r4b1 r4b2 r8b4; do
    timeout 150 python3 -m pipelines.runner .plans/sb/$v --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "$v round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/sb/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/sb/$v/results.jsonl
  done
done
