# Both transformer blocks as `pipelines tune-model` builds them at the head of the tree (the shipped softmax kernel),
# beside IREE's default and PyTorch (README.md). On the GPU machine, from the repository root, with .plans/b16 and
# .whl/ carried:   bash results/h200/softmax/head/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
for spec in c:8192:1024:4096 a:4096:2048:8192; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  m=.plans/b16/$b
  modules="head=$m/head.vmfb default=$m/default.vmfb"
  [ -f $m/run4.vmfb ] && modules="head=$m/head.vmfb run4=$m/run4.vmfb default=$m/default.vmfb"
  timeout 200 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json $modules 2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 70 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
