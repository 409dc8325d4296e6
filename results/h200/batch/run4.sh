# C stored by TMA beside the staged stores: the kernels of gen4.py (.plans/g4, 38 cases, the runner beside cuBLAS),
# then blocks a, c and m with every Hopper kernel storing by TMA (`../timeline/gen_tma.py`: tma.vmfb) beside the
# modules as tune-model builds them now (head.vmfb: a and c as in ../timeline/run9, m as in run10), and
# torch.compile. On the GPU machine, from the repository root, with .plans/g4, .plans/tmac and .whl/ carried:
#   bash results/h200/batch/run4.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 240 python3 -m pipelines.runner .plans/g4 --device cuda --repetitions 2 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/g4/results.jsonl $OUT/g4.jsonl
for spec in a:4096:2048:8192:1 c:8192:1024:4096:1 m:4096:2048:8192:16; do
  IFS=: read b rows width mlp heads <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp --heads $heads
  m=.plans/tmac/$b
  timeout 80 python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda --cached-allocations \
    --rounds 3 -o $OUT/rows_$b.json head=$m/head.vmfb tma=$m/tma.vmfb 2>> $OUT/err.txt \
    || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout 50 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp --heads $heads 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
