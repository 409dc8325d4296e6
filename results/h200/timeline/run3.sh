# Block a's timeline with each call's host range (trace.py), and iree-benchmark-module's time per call of the
# module under each CUDA runtime flag (README.md). On the GPU machine, from the repository root, with .plans/b16
# and .whl/ carried:   bash results/h200/timeline/run3.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 tools/transformer_block.py data /tmp/data_a --rows 4096 --width 2048 --mlp 8192
timeout 200 python3 results/h200/timeline/trace.py /tmp/data_a .plans/b16/a/head.vmfb 30 $OUT/trace_a.json >> $OUT/log.txt 2>> $OUT/err.txt \
  || echo "trace stopped ($?)" >> $OUT/err.txt
inputs=$(python3 -c "from pathlib import Path; from pipelines.model_runner import load_inputs; print(' '.join(load_inputs(Path('/tmp/data_a'))[1]))")
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
for flags in "" "--cuda_async_allocations=false --device_allocator=caching" \
    "--cuda_async_allocations=false --device_allocator=caching --cuda_use_streams=false" \
    "--cuda_async_allocations=false --device_allocator=caching --cuda_allow_inline_execution=true"; do
  echo "flags: $flags" >> $OUT/bench.txt
  timeout 60 $tool --module=.plans/b16/a/head.vmfb --device=cuda --function=block $inputs $flags \
    --benchmark_min_warmup_time=0.3 --benchmark_min_time=0.5s --benchmark_repetitions=3 2>&1 | grep real_time_median >> $OUT/bench.txt
done
