# Blocks a, c and m as tune-model builds them with C stored by TMA where routes.hopper.store_rule says so (this
# commit; `transformer_block.py onnx` with --weights inputs, then `pipelines tune-model X.onnx --target sm_90a
# --pipeline hopper`: .plans/b19/<b>/head.vmfb = tuned/gemm.vmfb, default.vmfb = default/gemm.vmfb), beside IREE's
# default and torch.compile in one run. On the GPU machine, from the repository root, with .plans/b19 and .whl/:
#   bash results/h200/timeline/run11.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for spec in a:4096:2048:8192:1 c:8192:1024:4096:1 m:4096:2048:8192:16; do
  IFS=: read b rows width mlp heads <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp --heads $heads
  m=.plans/b19/$b
  modules="head=$m/head.vmfb"
  [ -f $m/default.vmfb ] && modules="$modules default=$m/default.vmfb"
  timeout 80 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json $modules 2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 90 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp --heads $heads 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
