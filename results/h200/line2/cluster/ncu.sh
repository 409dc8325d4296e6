# Nsight Compute on one launch of 8192^3 bf16 NT (C in bf16) in clusters of 2 (c21) and of 2x2 (c22), gen.py's
# plans: launch statistics and occupancy (the cluster's most active clusters), warp stall reasons, tensor-pipe and
# memory throughput. On the GPU machine, with .plans/cl1 and .whl/ carried: bash results/h200/line2/cluster/ncu.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
  --section SchedulerStats --section MemoryWorkloadAnalysis --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__cluster_dim_x,dram__bytes_read.sum,lts__t_bytes.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min"
for v in c21 c22; do
  python3 -c "
import json
from pathlib import Path
from pipelines.runner import make_inputs
p = json.load(open('.plans/cl1/$v/plan.json'))
for c in p['cases']:
    g = c['problem']
    if (g['m'], g['n'], g['k'], g['dtype'], g['layout']) == (8192, 8192, 8192, 'bf16', 'nt'):
        folder = Path('/tmp/in_' + c['id']); folder.mkdir(exist_ok=True)
        print('.plans/cl1/$v/' + c['vmfb'], *[f'--input={f}' for f in make_inputs(c, folder).files])
" > /tmp/case.txt
  read vmfb in_a in_b < /tmp/case.txt
  timeout 200 ncu --csv $SECTIONS --launch-skip 2 --launch-count 1 --cache-control none --clock-control base \
    $tool --module=$vmfb --device=cuda --function=gemm $in_a $in_b --benchmark_min_time=1x > $OUT/ncu_$v.csv \
    2>> $OUT/err.txt || echo "ncu $v stopped" >> $OUT/err.txt
done
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
