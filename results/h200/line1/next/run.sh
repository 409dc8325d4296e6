# Prepared for the next GPU session (not run): Nsight Compute on each case of the plan (the `hopper` pipeline's
# kernels as shipped at the commit the plan names), the sections that say where a kernel's time goes, two launches
# after five (for a K-sliced case, the GEMM and IREE's reduction of its slices both), then the runner's own timing
# of the plan beside cuBLAS. Plan, built here (gemm.mlir files deleted to keep the carry small):
#   pipelines bench --target sm_90a --suite results/h200/line1/next/suite.json --dtype bf16 --pipelines hopper --compile-only -o .plans/ncu1
#   find .plans/ncu1 -name gemm.mlir -delete
# On the GPU machine, from the repository root, with .plans/ncu1 and .whl/ carried:
#   bash results/h200/line1/next/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
python3 -c "
import json
p = json.load(open('.plans/ncu1/plan.json'))
for c in p['cases']:
    if c['status'] != 'ok':
        continue
    g = c['problem']; t = g['dtype']; m, n, k = g['m'], g['n'], g['k']
    b = f'{k}x{n}' if g['layout'] == 'nn' else f'{n}x{k}'
    print(c['id'], '.plans/ncu1/' + c['vmfb'], f'--input={m}x{k}x{t}=1 --input={b}x{t}=1')
" > /tmp/cases.txt
while read id vmfb in_a in_b; do
  timeout 120 ncu --csv --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --launch-skip 5 --launch-count 2 \
    --cache-control none --clock-control none $tool --module=$vmfb --device=cuda --function=gemm $in_a $in_b \
    --benchmark_min_time=0.2s > $OUT/ncu_$id.csv 2>> $OUT/err.txt || echo "ncu $id stopped ($?)" >> $OUT/err.txt
done < /tmp/cases.txt
cp /tmp/cases.txt $OUT/cases.txt
timeout 120 python3 -m pipelines.runner .plans/ncu1 --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/ncu1/results.jsonl $OUT/ncu1.jsonl
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
