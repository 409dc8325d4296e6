# The multi-head block m (16 heads, S 4096, D 2048, F 8192) as `tune-model --pipeline hopper` builds it now (C
# stored in the heads' layout by default: heads.vmfb, as run12's), with --iree-transposes (head.vmfb, run11's
# build), IREE's default and torch.compile in one call (run12's torch row of m did not come back). On the GPU
# machine, from the repository root, with .plans/b20 (run12's) and .whl/ carried:
#   bash results/h200/timeline/run13.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 tools/transformer_block.py data /tmp/data_m --rows 4096 --width 2048 --mlp 8192 --heads 16
m=.plans/b20/m
timeout 100 python3 -m pipelines.model_runner --function block --inputs /tmp/data_m --device cuda --cached-allocations \
  --rounds 3 -o $OUT/rows_m.json heads=$m/heads.vmfb head=$m/head.vmfb default=$m/default.vmfb 2>> $OUT/err.txt \
  || echo "m: model_runner stopped ($?)" >> $OUT/err.txt
timeout 100 python3 tools/transformer_block.py torch $OUT/torch_m.json --rows 4096 --width 2048 --mlp 8192 \
  --heads 16 2>> $OUT/err.txt || echo "m: torch stopped ($?)" >> $OUT/err.txt
