# The 2x2-cluster probe (gen.py): the runner on each variant in turn, ROUNDS rounds (default 2), cuBLAS beside each
# problem. On the GPU machine, from the repository root, with .plans/cl1 (`python results/h200/line2/cluster/gen.py
# .plans/cl1`, then `find .plans/cl1 -name gemm.mlir -delete`) and .whl/ carried:
#   bash results/h200/line2/cluster/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in $(seq ${ROUNDS:-2}); do
  for v in ${VARIANTS:-c21 c22}; do
    timeout ${LIMIT_S:-150} python3 -m pipelines.runner .plans/cl1/$v --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "$v round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/cl1/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/cl1/$v/results.jsonl
  done
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
