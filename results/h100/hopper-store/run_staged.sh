# On the GPU machine, from the repository root, with .plans/{edges,ef163,verb2} and .whl/ carried (commands in
# README.md): the staged 16-bit stores' correctness at the edges and speed on the epilogue suite (pipelines.runner),
# then the transformer blocks built by `pipelines tune-model --pipeline hopper` (model_runner) and PyTorch.
#   bash results/h100/hopper-store/run_staged.sh "a:4096:2048:8192 c:8192:1024:4096"   -> $OUT/all.tgz
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for p in edges ef163; do
  timeout ${LIMIT_S:-200} python3 -m pipelines.runner .plans/$p --device cuda --repetitions ${REPS:-3} 2>> $OUT/err.txt \
    || echo "$p: runner stopped ($?)" >> $OUT/err.txt
  cp .plans/$p/results.jsonl $OUT/$p.jsonl
done
for spec in $1; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  timeout ${LIMIT_S:-200} python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda \
    --rounds ${ROUNDS:-3} -o $OUT/rows_$b.json hopper=.plans/verb2/$b/hopper.vmfb default=.plans/verb2/$b/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout ${LIMIT_S:-200} python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
cd $OUT && tar czf all.tgz --exclude=all.tgz . && find . -type f ! -name all.tgz -delete
