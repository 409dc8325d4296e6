# Both blocks: the modules tune-model builds at the head (clusters of two on the cooperative products) and with
# clusters of one on them (c1: hopper_model's rule changed in a worktree, README.md), beside IREE's default and
# PyTorch, in one run. On the GPU machine, from the repository root, with .plans/b17 and .whl/ carried:
#   bash results/h200/timeline/run8.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for spec in c:8192:1024:4096 a:4096:2048:8192; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  m=.plans/b17/$b
  timeout 150 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 2 -o $OUT/rows_$b.json head=$m/head.vmfb c1=$m/c1.vmfb default=$m/default.vmfb 2>> $OUT/err.txt \
    || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 60 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
