# The last unit of each tile sums it (last2.patch at 929fe8d; plan from genlast2.py, gemm.mlir removed). On the GPU
# machine, from the repository root, with .plans/last2c and .whl/ carried:   bash results/h200/skinny-hopper/next/run_last2.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 results/h100/skinny/copy_bandwidth.py -o $OUT/copy_bandwidth.jsonl 2>> $OUT/err.txt
timeout 240 python3 -m pipelines.runner .plans/last2c --device cuda --repetitions 2 2>> $OUT/err.txt \
  || echo "last2c: runner stopped ($?)" >> $OUT/err.txt
cp .plans/last2c/results.jsonl $OUT/last2.jsonl
python3 results/h100/skinny/copy_bandwidth.py -o $OUT/copy_bandwidth.jsonl 2>> $OUT/err.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
