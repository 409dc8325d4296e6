# On the GPU machine, from the repository root, with .plans/model (build.py's output; MODELS=FOLDER for another) and .whl/ (iree-base-runtime
# 3.13.0) carried along:   bash results/h100/hopper-model/run.sh "a:4096:2048:8192 c:8192:1024:4096"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/gpu.txt
for spec in $1; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  timeout ${LIMIT_S:-200} python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda \
    --rounds ${ROUNDS:-5} -o $OUT/rows_$b.json hopper=${MODELS:-.plans/model}/$b/hopper.vmfb default=${MODELS:-.plans/model}/$b/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout ${LIMIT_S:-200} python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
