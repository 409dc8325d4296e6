# NEXT (not run: written when this session's device time was spent). C stored in attention's head layout, first GPU
# run: the kernels of results/h200/batch/gen5.py (.plans/g5: each beside the same kernel storing C plainly, the
# runner's float64 check on C moved back), then the multi-head block m built with `tune-model --head-stores`
# (heads.vmfb; 495019d+: `transformer_block.py onnx m.onnx --rows 4096 --width 2048 --mlp 8192 --heads 16 --weights
# inputs`, `pipelines tune-model m.onnx --target sm_90a --pipeline hopper --head-stores -o mh`) beside m as built
# without it (head.vmfb, ../timeline/run11's), IREE's default, and torch.compile; then blocks a and c as built now
# (.plans/b19, run11's) beside torch.compile again. On the GPU machine, from the repository root, with .plans/g5,
# .plans/b20, .plans/b19 and .whl/ carried:
#   bash results/h200/timeline/run12.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 120 python3 -m pipelines.runner .plans/g5 --device cuda --repetitions 2 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/g5/results.jsonl $OUT/g5.jsonl
for spec in m:4096:2048:8192:16:b20 a:4096:2048:8192:1:b19 c:8192:1024:4096:1:b19; do
  IFS=: read b rows width mlp heads plans <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp --heads $heads
  m=.plans/$plans/$b
  modules=""
  for f in $m/*.vmfb; do modules="$modules $(basename $f .vmfb)=$f"; done
  timeout 100 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json $modules 2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 90 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp --heads $heads 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
