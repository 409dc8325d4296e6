python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 results/h100/skinny/copy_bandwidth.py -o $OUT/copy_bandwidth.jsonl 2>> $OUT/err.txt
timeout 250 python3 -m pipelines.runner .plans/sk2c --device cuda --repetitions 2 2>> $OUT/err.txt || echo "sk2c: runner stopped ($?)" >> $OUT/err.txt
cp .plans/sk2c/results.jsonl $OUT/sk2.jsonl
python3 results/h100/skinny/copy_bandwidth.py -o $OUT/copy_bandwidth.jsonl 2>> $OUT/err.txt
for spec in a:4096:2048:8192 c:8192:1024:4096; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  timeout 150 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json hopper=.plans/verb2/$b/hopper.vmfb default=.plans/verb2/$b/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 120 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf all.tgz --exclude=all.tgz . && find . -type f ! -name all.tgz -delete
