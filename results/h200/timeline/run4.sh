# iree-benchmark-module on block a with invocations batched (--batch_size, --batch_concurrency), beside PyTorch
# (README.md). On the GPU machine, from the repository root, with .plans/b16 and .whl/ carried:
#   bash results/h200/timeline/run4.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
[ -d /tmp/data_a ] || python3 tools/transformer_block.py data /tmp/data_a --rows 4096 --width 2048 --mlp 8192
inputs=$(python3 -c "from pathlib import Path; from pipelines.model_runner import load_inputs; print(' '.join(load_inputs(Path('/tmp/data_a'))[1]))")
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
cached="--cuda_async_allocations=false --device_allocator=caching"
for m in head default; do
for b in "1 1" "10 1" "10 10" "20 20"; do
  read bs bc <<< "$b"
  for flags in "" "$cached"; do
  echo "module $m batch $bs concurrency $bc flags: $flags" >> $OUT/bench.txt
  timeout 60 $tool --module=.plans/b16/a/$m.vmfb --device=cuda --function=block $inputs $flags --batch_size=$bs --batch_concurrency=$bc \
    --benchmark_min_warmup_time=0.3 --benchmark_min_time=0.5s --benchmark_repetitions=3 2>&1 | grep "real_time_median\|rror" >> $OUT/bench.txt
  done
done
done
timeout 70 python3 tools/transformer_block.py torch $OUT/torch_a.json --rows 4096 --width 2048 --mlp 8192 2>> $OUT/err.txt
