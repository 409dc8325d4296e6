# 8192^3 bf16 NN and NT (C in bf16), the Hopper kernels as `hopper` ships them against cuBLAS: Nsight Compute on one
# launch of each (kernel name, grid, cluster, shared memory, registers, tensor-pipe and memory throughput, SM clock),
# then each run back to back for 4 s while nvidia-smi samples the SM clock and the power every 100 ms (both at the
# 700 W limit: whichever does its FLOPs on fewer joules runs at the higher clock), inputs the runner's random
# normals (cuBLAS: torch's) for both. Plan: line2's .plans/l3 (README).
# On the GPU machine, with .plans/l3 and .whl/ carried: bash results/h200/line2/ncu/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
here=results/h200/line2/ncu
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__cluster_dim_x,launch__cluster_dim_y,dram__bytes_read.sum,lts__t_bytes.sum"
python3 -c "
import json
from pathlib import Path
from pipelines.runner import make_inputs
p = json.load(open('.plans/l3/plan.json'))
for c in p['cases']:
    g = c['problem']
    if (g['m'], g['n'], g['k'], g['dtype']) == (8192, 8192, 8192, 'bf16'):
        folder = Path('/tmp/in_' + c['id']); folder.mkdir(exist_ok=True)
        print(g['layout'], '.plans/l3/' + c['vmfb'], *[f'--input={f}' for f in make_inputs(c, folder).files])
" > /tmp/cases.txt
while read layout vmfb in_a in_b; do
  timeout 150 ncu --csv $SECTIONS --launch-skip 2 --launch-count 1 --cache-control none --clock-control none \
    $tool --module=$vmfb --device=cuda --function=gemm $in_a $in_b --benchmark_min_time=1x > $OUT/ncu_hopper_$layout.csv 2>> $OUT/err.txt || echo "ncu hopper $layout stopped" >> $OUT/err.txt
  timeout 150 ncu --csv $SECTIONS --launch-skip 2 --launch-count 1 --cache-control none --clock-control none \
    python3 $here/cublas.py 8192x8192x8192 $layout > $OUT/ncu_cublas_$layout.csv 2>> $OUT/err.txt \
    || echo "ncu cublas $layout stopped" >> $OUT/err.txt
  for side in hopper cublas; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 \
      > $OUT/smi_${side}_$layout.csv &
    smi=$!
    if [ $side = hopper ]; then
      timeout 60 $tool --module=$vmfb --device=cuda --function=gemm $in_a $in_b --benchmark_min_time=4s \
        > /dev/null 2>> $OUT/err.txt
    else
      timeout 60 python3 $here/cublas.py 8192x8192x8192 $layout --seconds 4 2>> $OUT/err.txt
    fi
    kill $smi
    sleep 3
  done
done < /tmp/cases.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
