# Run 1 (2026-11-28, results in run1/). The batched Hopper kernels' first GPU run:
# float64 checks and times beside IREE's default and cuBLAS (torch.matmul on the rank-3 operands). Built with
#   pipelines bench --target sm_90a --suite results/h200/batch/suite.json --dtype bf16,f16 --pipelines default,hopper \
#       --compile-only -o .plans/batch          # at 972b930: 40 cases
# On the GPU machine, from the repository root, with .plans/batch and .whl/ carried:
#   bash results/h200/batch/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 500 python3 -m pipelines.runner .plans/batch --device cuda --repetitions 2 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/batch/results.jsonl $OUT/batch.jsonl
