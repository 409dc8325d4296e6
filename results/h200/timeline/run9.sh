# Run 9 (2026-11-28, results in run9/). Both blocks with model_runner --back-to-back
# (pipelines/back_to_back.py) beside torch.compile's back-to-back and waited calls, in one run. On the GPU machine,
# from the repository root, with .plans/b17 (the modules of run8: head, default; m/: the multi-head block,
# `transformer_block.py onnx m.onnx --rows 4096 --width 2048 --mlp 8192 --heads 16 --weights inputs`, then
# `pipelines tune-model m.onnx --target sm_90a --pipeline hopper -o m` at 0c3c491: m/tuned, m/default) and .whl/ carried:
#   bash results/h200/timeline/run9.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for spec in c:8192:1024:4096:1 a:4096:2048:8192:1 m:4096:2048:8192:16; do
  IFS=: read b rows width mlp heads <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp --heads $heads
  m=.plans/b17/$b
  timeout 240 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --back-to-back --rounds 3 -o $OUT/rows_$b.json head=$m/head.vmfb default=$m/default.vmfb 2>> $OUT/err.txt \
    || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 70 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp --heads $heads 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
