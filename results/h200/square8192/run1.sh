# Clocks and board power under sustained calls, ours against cuBLAS (clocks.py: each case 3 s of calls, ours then
# cuBLAS, two rounds): bf16 8192³ NN and NT with a bf16 C as shipped, NN without a cluster, and block a's ·W2
# product (gen.py). On the GPU machine, from the repository root, with .plans/s8 (`python
# results/h200/square8192/gen.py .plans/s8`) and .whl/ carried:
#   bash results/h200/square8192/run1.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm,clocks.sm,temperature.gpu --format=csv >> $OUT/gpu.txt
timeout 200 python3 results/h200/square8192/clocks.py .plans/s8 3 2 > $OUT/clocks.jsonl 2> $OUT/smi.txt \
  || echo "clocks stopped ($?)" >> $OUT/err.txt
timeout 200 python3 -m pipelines.runner .plans/s8 --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/s8/results.jsonl $OUT/s8.jsonl
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
