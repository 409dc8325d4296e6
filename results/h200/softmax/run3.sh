# The third run (README.md): the blocks as `pipelines tune-model --pipeline hopper` builds them at 28ec45e (the
# softmax kernel, the Gelu's erf clamped by selects) beside the second run's modules (the erf before) and IREE's
# default. On the GPU machine, from the repository root, with .plans/run3m (README.md says how it was built) and
# .whl/ carried:   bash results/h200/softmax/run3.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
for spec in a:4096:2048:8192 c:8192:1024:4096; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  m=.plans/run3m/$b
  timeout 200 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 5 -o $OUT/rows_$b.json hopper=$m/hopper.vmfb oldgelu=$m/oldgelu.vmfb default=$m/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 120 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
