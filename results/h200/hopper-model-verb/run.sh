# On the GPU machine, from the repository root, with .plans/verb (each block's `pipelines tune-model --pipeline
# hopper` output: <b>/hopper.vmfb = OUT/tuned/gemm.vmfb, <b>/default.vmfb = OUT/default/gemm.vmfb), .plans/floor
# (a one-dispatch module) and .whl/ carried:   bash results/h200/hopper-model-verb/run.sh "a:4096:2048:8192 ..."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
nvidia-smi --query-gpu=driver_version,power.limit,clocks.max.sm --format=csv >> $OUT/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader -lms 250 > $OUT/clocks.csv &
sampler=$!
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
bench() {  # module, flags...: median ms of one iree-benchmark-module run
  timeout 120 $tool --module=$1 --device=cuda --function=block "${@:2}" --benchmark_repetitions=3 \
    --benchmark_min_warmup_time=0.2 --benchmark_min_time=0.5s --benchmark_format=json 2>> $OUT/err.txt | python3 -c \
    "import json,sys,statistics; r=json.load(sys.stdin)['benchmarks']; print(statistics.median(x['real_time'] for x in r if x.get('run_type')=='iteration'), r[0]['time_unit'])"
}
echo "floor (one 16-element dispatch): $(bench .plans/floor/floor.vmfb --input=16xf32=1)" >> $OUT/floor.txt
echo "floor, synchronous cached allocations: $(bench .plans/floor/floor.vmfb --input=16xf32=1 --cuda_async_allocations=false --device_allocator=caching)" >> $OUT/floor.txt
for spec in $1; do
  IFS=: read b rows width mlp <<< "$spec"
  python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  inputs=$(python3 -c "import json; print(' '.join('--input=@/tmp/data_$b/'+e['file'] for e in json.load(open('/tmp/data_$b/inputs.json'))['inputs']))")
  echo "$b start $(date +%T.%N)" >> $OUT/marks.txt
  timeout ${LIMIT_S:-200} python3 -m pipelines.model_runner --function block --inputs /tmp/data_$b --device cuda \
    --rounds ${ROUNDS:-5} -o $OUT/rows_$b.json hopper=.plans/verb/$b/hopper.vmfb default=.plans/verb/$b/default.vmfb \
    2>> $OUT/err.txt || echo "$b: model_runner stopped ($?)" >> $OUT/err.txt
  echo "$b runner done $(date +%T.%N)" >> $OUT/marks.txt
  for round in 1 2; do
    for mod in hopper default; do
      echo "$b round$round $mod, synchronous cached allocations: $(bench .plans/verb/$b/$mod.vmfb $inputs --cuda_async_allocations=false --device_allocator=caching)" >> $OUT/flags_$b.txt
    done
  done
  echo "$b flags done $(date +%T.%N)" >> $OUT/marks.txt
  timeout ${LIMIT_S:-200} python3 tools/transformer_block.py torch $OUT/torch_$b.json --rows $rows --width $width \
    --mlp $mlp 2>> $OUT/err.txt || echo "$b: torch stopped ($?)" >> $OUT/err.txt
  echo "$b torch done $(date +%T.%N)" >> $OUT/marks.txt
done
kill $sampler
