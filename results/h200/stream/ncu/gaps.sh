# Each kernel's GPU time and the gap to the next, back to back as the runner times them (CUPTI through the PyTorch
# profiler, `trace.py`), for the plan's cases (the stream kernel as `hopper` ships it) and cuBLAS on the same rows,
# inputs ones and random; then the runner, and iree-benchmark-module with splat inputs, with the runner's random
# inputs and with cached synchronous allocations.
# Plan, built here: pipelines bench --target sm_90a --suite results/h200/stream/decode.json --dtype bf16 --pipelines hopper --compile-only -o .plans/ncu2
# On the GPU machine, with .plans/ncu2 and .whl/ carried: bash results/h200/stream/ncu/gaps.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
here=results/h200/stream/ncu
for flag in "" --random; do
  timeout 200 python3 $here/trace.py .plans/ncu2 $flag >> $OUT/gaps.jsonl 2>> $OUT/err.txt \
    || echo "trace $flag stopped ($?)" >> $OUT/err.txt
done
timeout 200 python3 -m pipelines.runner .plans/ncu2 --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/ncu2/results.jsonl $OUT/runner.jsonl
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
python3 -c "
import json, numpy as np
from pipelines.runner import make_inputs
from pathlib import Path
p = json.load(open('.plans/ncu2/plan.json'))
for c in p['cases']:
    Path('/tmp/in_' + c['id']).mkdir(exist_ok=True)
    ins = make_inputs(c, Path('/tmp/in_' + c['id']))
    g = c['problem']; t = g['dtype']; m, n, k = g['m'], g['n'], g['k']
    b = f'{k}x{n}' if g['layout'] == 'nn' else f'{n}x{k}'
    print(g['layout'], '.plans/ncu2/' + c['vmfb'], f'--input={m}x{k}x{t}=1', f'--input={b}x{t}=1', *[f'--input={f}' for f in ins.files])
" > /tmp/cases.txt
while read layout vmfb s1 s2 r1 r2; do
  for inputs in "$s1 $s2" "$r1 $r2"; do
    for flags in "" "--cuda_async_allocations=false --device_allocator=caching"; do
      echo "$layout | $inputs | $flags" >> $OUT/bench.txt
      $tool --module=$vmfb --device=cuda --function=gemm $inputs $flags --benchmark_repetitions=3 \
        --benchmark_min_warmup_time=0.2 --benchmark_min_time=0.3s 2>&1 | grep -E "^BM_|real_time|mean|median" >> $OUT/bench.txt
    done
  done
done < /tmp/cases.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
