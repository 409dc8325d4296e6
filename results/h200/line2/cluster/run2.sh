# The equal-rounds probe (gen_rounds.py's plan .plans/cl2): the runner on each variant in turn, two rounds, cuBLAS
# beside each problem; then joules per product (energy.py), 4 s each (SECONDS_EACH) of cuBLAS and every variant, two rounds.
# On the GPU machine, with .plans/cl2 and .whl/ carried: bash results/h200/line2/cluster/run2.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in 1 2; do
  for v in c21 c21s c22; do
    timeout 120 python3 -m pipelines.runner .plans/cl2/$v --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "$v round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/cl2/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/cl2/$v/results.jsonl
  done
done
timeout 240 python3 results/h200/line2/cluster/energy.py .plans/cl2 c21 c21s c22 --seconds ${SECONDS_EACH:-4} \
  > $OUT/energy.jsonl 2>> $OUT/err.txt || echo "energy stopped ($?)" >> $OUT/err.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
