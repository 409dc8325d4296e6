# Ping-pong kernels for the blocks' small-K products (README.md). On the GPU machine, from the repository root, with
# .plans/pp and .whl/ carried:   bash results/h200/softmax/pingpong/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
for spec in c:8192:1024:4096 a:4096:2048:8192; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  m=.plans/pp/$b
  modules="hopper=$m/hopper.vmfb pp=$m/pp.vmfb default=$m/default.vmfb"
  [ -f $m/ppqk.vmfb ] && modules="$modules ppqk=$m/ppqk.vmfb"
  timeout 150 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json $modules 2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 70 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
