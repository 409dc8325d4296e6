# On the GPU machine, from the repository root, with .plans/model{,4,5} (build.py's output: unfused, Gelu fused
# ping-pong, Gelu fused cooperative) and .whl/ carried:  bash results/h100/hopper-model/probe/run.sh "a:4096:2048:8192 ..."
# 1. iree-benchmark-module's allocation flags on the unfused Hopper module and IREE's default (flags_<b>.txt);
# 2. model_runner on the four modules (rows_<b>.json: float64 errors, end-to-end, per launch); 3. PyTorch.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
for spec in $1; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  inputs=$(python3 -c "import json,sys; print(' '.join('--input=@/tmp/data_$b/'+e['file'] for e in json.load(open('/tmp/data_$b/inputs.json'))['inputs']))")
  for round in 1 2; do
    for mod in hopper default; do
      for flags in "" "--device_allocator=caching" "--cuda_async_allocations=false" \
          "--cuda_async_allocations=false --device_allocator=caching"; do
        ms=$(timeout 120 $tool --module=.plans/model/$b/$mod.vmfb --device=cuda --function=block $inputs $flags \
          --benchmark_repetitions=3 --benchmark_min_warmup_time=0.2 --benchmark_min_time=0.5s --benchmark_format=json \
          2>> $OUT/err.txt | python3 -c "import json,sys,statistics; r=json.load(sys.stdin)['benchmarks']; print(statistics.median(x['real_time'] for x in r if x.get('run_type')=='iteration'), r[0]['time_unit'])")
        echo "$b round$round $mod [$flags] $ms" >> $OUT/flags_$b.txt
      done
    done
  done
  timeout ${LIMIT_S:-240} python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda \
    --rounds ${ROUNDS:-3} -o $OUT/rows_$b.json hopper=.plans/model/$b/hopper.vmfb fused_pingpong=.plans/model4/$b/hopper.vmfb \
    fused_cooperative=.plans/model5/$b/hopper.vmfb default=.plans/model/$b/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  timeout ${LIMIT_S:-200} python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
