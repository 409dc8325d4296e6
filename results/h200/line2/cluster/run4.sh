# The stream-K probe (gen_field.py's stream_k plan .plans/cl4): the runner on c21sk first (a hang shows at
# once), then c21 and c21sk in turn, two rounds in all, cuBLAS beside each problem, every row float64-checked.
# On the GPU machine, with .plans/cl4 and .whl/ carried: bash results/h200/line2/cluster/run4.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for v in c21sk c21 c21 c21sk; do
  timeout ${LIMIT_S:-90} python3 -m pipelines.runner .plans/cl4/$v --device cuda --repetitions 3 > /dev/null \
    2>> $OUT/err.txt || { echo "$v: runner stopped ($?)" >> $OUT/err.txt; [ $v = c21sk ] && break; }
  cat .plans/cl4/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/cl4/$v/results.jsonl
done
nvidia-smi --query-gpu=clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
