# iree-benchmark-module on block a and c: the module as tune-model builds it, and compiled with
# --iree-hal-indirect-command-buffers=false or --iree-hal-memoization=false, under runtime flags (README.md). On the
# GPU machine, from the repository root, with .plans/b16 and .whl/ carried:   bash results/h200/timeline/run5.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
cached="--cuda_async_allocations=false --device_allocator=caching"
for spec in a:4096:2048:8192 c:8192:1024:4096; do
  IFS=: read b rows width mlp <<< "$spec"
  [ -d /tmp/data_$b ] || python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  inputs=$(python3 -c "from pathlib import Path; from pipelines.model_runner import load_inputs; print(' '.join(load_inputs(Path('/tmp/data_$b'))[1]))")
  for round in 1 2; do
  for m in head direct nomemo; do
    for flags in "$cached" "$cached --cuda_allow_inline_execution=true" "$cached --cuda_use_streams=false"; do
      echo "block $b round $round module $m flags: $flags" >> $OUT/bench.txt
      timeout 60 $tool --module=.plans/b16/$b/$m.vmfb --device=cuda --function=block $inputs $flags \
        --benchmark_min_warmup_time=0.3 --benchmark_min_time=0.5s --benchmark_repetitions=3 2>&1 | grep "real_time_median\|rror" >> $OUT/bench.txt
    done
  done
  done
  timeout 70 python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width --mlp $mlp 2>> $OUT/err.txt
done
