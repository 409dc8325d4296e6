# The multi-head block (m) with its two batched products on the Hopper kernels (tune-model at this commit's parent:
# `transformer_block.py onnx m.onnx --rows 4096 --width 2048 --mlp 8192 --heads 16 --weights inputs`, then
# `pipelines tune-model m.onnx --target sm_90a --pipeline hopper -o m`; default.vmfb as in run9), beside
# torch.compile, and the batched products' schedules (`results/h200/batch/gen.py .plans/batch2`) beside cuBLAS.
# On the GPU machine, from the repository root, with .plans/b18, .plans/batch2 and .whl/ carried:
#   bash results/h200/timeline/run10.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 tools/transformer_block.py data /tmp/data_m --rows 4096 --width 2048 --mlp 8192 --heads 16
timeout 200 python3 -m pipelines.model_runner --function block --inputs /tmp/data_m --device cuda --cached-allocations \
  --back-to-back --rounds 3 -o $OUT/rows_m.json head=.plans/b18/m/head.vmfb default=.plans/b18/m/default.vmfb \
  2>> $OUT/err.txt || echo "m: model_runner stopped ($?)" >> $OUT/err.txt
timeout 70 python3 tools/transformer_block.py torch $OUT/torch_m.json --rows 4096 --width 2048 --mlp 8192 --heads 16 \
  2>> $OUT/err.txt || echo "m: torch stopped ($?)" >> $OUT/err.txt
timeout 200 python3 -m pipelines.runner .plans/batch2 --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/batch2/results.jsonl $OUT/batch2.jsonl
