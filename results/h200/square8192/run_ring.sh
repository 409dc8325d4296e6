# The store-ring probe (gen_ring.py): the runner on the shipped ring of 4 and on a ring of 8, in turn, two rounds
# (cuBLAS timed by the runner beside each problem). On the GPU machine, from the repository root, with .plans/ring
# (`python results/h200/square8192/gen_ring.py .plans/ring`) and .whl/ carried:
#   bash results/h200/square8192/run_ring.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in 0 1; do
  for ring in 4 8; do
    timeout 150 python3 -m pipelines.runner .plans/ring/ring$ring --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "ring$ring round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/ring/ring$ring/results.jsonl >> $OUT/ring$ring.jsonl && rm .plans/ring/ring$ring/results.jsonl
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
