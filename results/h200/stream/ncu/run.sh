# Nsight Compute on the decode row (16x8192x8192 bf16, C rounded to bf16), NN and NT: the stream kernel as the
# `hopper` pipeline ships it and cuBLAS (torch.matmul) side by side, plus a plain read of B's 128 MiB (torch sum)
# as a yardstick. Plan, built here (gemm.mlir and dump/ deleted to keep the carry small):
#   pipelines bench --target sm_90a --suite results/h200/stream/decode.json --dtype bf16 --pipelines hopper --compile-only -o .plans/ncu2
# On the GPU machine, from the repository root, with .plans/ncu2 and .whl/ carried:
#   bash results/h200/stream/ncu/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
here=results/h200/stream/ncu
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section Occupancy --section LaunchStats --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,launch__cluster_dim_x"
python3 -c "
import json
p = json.load(open('.plans/ncu2/plan.json'))
for c in p['cases']:
    if c['status'] != 'ok':
        continue
    g = c['problem']; t = g['dtype']; m, n, k = g['m'], g['n'], g['k']
    b = f'{k}x{n}' if g['layout'] == 'nn' else f'{n}x{k}'
    print(g['layout'], '.plans/ncu2/' + c['vmfb'], f'--input={m}x{k}x{t}=1 --input={b}x{t}=1')
" > /tmp/cases.txt
while read layout vmfb in_a in_b; do
  timeout 120 ncu --csv $SECTIONS --launch-skip 5 --launch-count 2 --cache-control none --clock-control none \
    $tool --module=$vmfb --device=cuda --function=gemm $in_a $in_b --benchmark_min_time=0.2s \
    > $OUT/ncu_stream_$layout.csv 2>> $OUT/err.txt || echo "ncu stream $layout stopped ($?)" >> $OUT/err.txt
  timeout 120 ncu --csv $SECTIONS --launch-skip 4 --launch-count 4 --cache-control none --clock-control none \
    python3 $here/cublas.py $layout > $OUT/ncu_cublas_$layout.csv 2>> $OUT/err.txt \
    || echo "ncu cublas $layout stopped ($?)" >> $OUT/err.txt
done < /tmp/cases.txt
cp /tmp/cases.txt $OUT/cases.txt
python3 $here/cublas.py nn --calls 1 --read > $OUT/read.json 2>> $OUT/err.txt
timeout 120 python3 -m pipelines.runner .plans/ncu2 --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/ncu2/results.jsonl $OUT/ncu2.jsonl
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
