# On the GPU machine, from the repository root, with build.py's OUT at .plans/softmax and .whl/ (iree-base-runtime
# 3.13.0) carried:   bash results/h200/softmax/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
timeout 120 python3 results/h200/softmax/check.py .plans/softmax/alone $OUT/alone.jsonl 2>> $OUT/err.txt \
  || echo "check: stopped or wrong ($?)" >> $OUT/err.txt
for spec in a:4096:2048:8192 c:8192:1024:4096; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  m=.plans/softmax/$b
  timeout 200 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json hopper=$m/hopper.vmfb nosoftmax=$m/nosoftmax.vmfb default=$m/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 120 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
