# The block products' tile-order probe (gen_blocks.py). On the GPU machine, from the repository root, with
# .plans/ordb (`python results/h200/order/gen_blocks.py .plans/ordb`) and .whl/ carried:
#   bash results/h200/order/run_blocks.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 400 python3 -m pipelines.runner .plans/ordb --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/ordb/results.jsonl $OUT/ordb.jsonl
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
