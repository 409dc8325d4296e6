# What a call of IREE's benchmark costs beside its dispatches: iree-benchmark-module on the decode row's stream
# kernels (NN, NT; the runner's random inputs) compiled with 200 (.plans/ncu2) and 1000 (.plans/rep1000) dispatches a
# call, under IREE's CUDA runtime flags (default; cached synchronous allocations; inline execution; both), and the
# runner on both plans. Plans, built here:
#   pipelines bench --target sm_90a --suite results/h200/stream/decode.json --dtype bf16 --pipelines hopper --compile-only -o .plans/ncu2
#   the same with pipelines.bench.MAX_REPEAT = 1000 -o .plans/rep1000
# On the GPU machine, with both plans and .whl/ carried: bash results/h200/stream/ncu/calls.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
for plan in ncu2 rep1000; do
  python3 -c "
import json
from pipelines.runner import make_inputs
from pathlib import Path
p = json.load(open('.plans/$plan/plan.json'))
for c in p['cases']:
    folder = Path('/tmp/in_' + c['id']); folder.mkdir(exist_ok=True)
    ins = make_inputs(c, folder)
    print(c['problem']['layout'], c['repeat'], '.plans/$plan/' + c['vmfb'], *[f'--input={f}' for f in ins.files])
" > /tmp/cases.txt
  while read layout repeat vmfb in_a in_b; do
    for flags in "" "--cuda_async_allocations=false --device_allocator=caching" "--cuda_allow_inline_execution=true" \
        "--cuda_async_allocations=false --device_allocator=caching --cuda_allow_inline_execution=true"; do
      ms=$($tool --module=$vmfb --device=cuda --function=gemm $in_a $in_b $flags --benchmark_repetitions=3 \
        --benchmark_min_warmup_time=0.2 --benchmark_min_time=0.5s --benchmark_format=json 2>> $OUT/err.txt \
        | python3 -c "import json,sys; r=json.load(sys.stdin)['benchmarks']; print(sorted(x['real_time'] for x in r if x.get('run_type')=='iteration')[1], r[0]['time_unit'])")
      echo "{\"layout\": \"$layout\", \"repeat\": $repeat, \"flags\": \"$flags\", \"per_call\": \"$ms\"}" >> $OUT/calls.jsonl
    done
  done < /tmp/cases.txt
  timeout 200 python3 -m pipelines.runner .plans/$plan --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
    || echo "runner $plan stopped ($?)" >> $OUT/err.txt
  cp .plans/$plan/results.jsonl $OUT/runner_$plan.jsonl
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
