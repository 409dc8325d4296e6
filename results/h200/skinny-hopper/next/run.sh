# Prepared for the next GPU session (not run yet): on the GPU machine, from the repository root, with .whl/ and the
# plans named below carried: copies without their gemm.mlir files (to fit the 64 MiB carry), named with a "c":
#   rm -rf .plans/Pc && cp -r .plans/P .plans/Pc && find .plans/Pc -name gemm.mlir -delete   (built 2026-11-28 at 5a1425d)
#   .plans/sknt   pipelines bench --target sm_90a --suite results/h200/skinny-hopper/suite-nt.json --dtype bf16 --pipelines auto,hopper --compile-only -o .plans/sknt
#   .plans/tk128  pipelines tune --target sm_90a --shape 128x8192x8192 --dtype bf16 --layout nn --route hopper --compile-only -o .plans/tk128
#   .plans/tk16   pipelines tune --target sm_90a --shape 16x4096x4096 --dtype bf16 --layout nn --route hopper --compile-only -o .plans/tk16
#   bash results/h200/skinny-hopper/next/run.sh "skntc"         # ~3 min: the NT skinny suite, copy bandwidth around it
#   bash results/h200/skinny-hopper/next/run.sh "tk128c tk16c"  # ~8 min: every Hopper schedule on the two rows missed
#   PROFILE=tk128c bash results/h200/skinny-hopper/next/run.sh ""   # Nsight Compute on the plan's first Hopper case
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
python3 results/h100/skinny/copy_bandwidth.py -o $OUT/copy_bandwidth.jsonl 2>> $OUT/err.txt
for p in $1; do
  timeout ${LIMIT_S:-280} python3 -m pipelines.runner .plans/$p --device cuda --repetitions ${REPS:-2} 2>> $OUT/err.txt \
    || echo "$p: runner stopped ($?)" >> $OUT/err.txt
  cp .plans/$p/results.jsonl $OUT/$p.jsonl
done
if [ -n "$PROFILE" ]; then  # the first Hopper case of the plan, its inputs splats (timing does not read values)
  read vmfb inputs <<< "$(python3 -c "
import json; p = json.load(open('.plans/$PROFILE/plan.json'))
c = next(c for c in p['cases'] if c['pipeline'].startswith('hopper') and c['status'] == 'ok')
g = c['problem']; t = g['dtype']; m, n, k = g['m'], g['n'], g['k']
b = f'{k}x{n}' if g['layout'] == 'nn' else f'{n}x{k}'
print('.plans/$PROFILE/' + c['vmfb'], f'--input={m}x{k}x{t}=1 --input={b}x{t}=1')")"
  tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
  timeout 240 ncu --csv --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section Occupancy --launch-skip 5 --launch-count 2 --cache-control none \
    --clock-control none $tool --module=$vmfb --device=cuda --function=gemm $inputs --benchmark_min_time=0.2s \
    > $OUT/profile_$PROFILE.csv 2>> $OUT/err.txt || echo "ncu stopped ($?)" >> $OUT/err.txt
fi
python3 results/h100/skinny/copy_bandwidth.py -o $OUT/copy_bandwidth.jsonl 2>> $OUT/err.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
