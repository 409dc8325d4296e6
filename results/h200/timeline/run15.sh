# Blocks a and c as `tune-model --pipeline hopper` builds them with each tile's TMA stores deferred under the next
# tile's first MMAs in 16-row boxes (`DEFER_STORES`, `STORE_BOX`, this commit; `transformer_block.py onnx X.onnx
# ... --weights inputs`, then `pipelines tune-model X.onnx --target sm_90a --pipeline hopper -o X`:
# .plans/b23/<b>/head.vmfb = tuned/gemm.vmfb, default.vmfb = default/gemm.vmfb), beside IREE's default and
# torch.compile in one call. On the GPU machine, from the repository root, with .plans/b23 and .whl/ carried:
#   bash results/h200/timeline/run15.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for spec in a:4096:2048:8192 c:8192:1024:4096; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp --heads 1
  m=.plans/b23/$b
  timeout 70 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json head=$m/head.vmfb default=$m/default.vmfb 2>> $OUT/err.txt \
    || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 80 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp --heads 1 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
