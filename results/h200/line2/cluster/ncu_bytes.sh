# Nsight Compute's DRAM and L2 bytes, duration and L2 hit rate of one launch of 8192³ bf16 NT in each variant of a
# plan folder, base clocks, into $OUT/ncu_VARIANT.csv (called by run3.sh and next.sh, on the GPU machine, with the
# runtime wheel on PYTHONPATH):  bash results/h200/line2/cluster/ncu_bytes.sh PLAN VARIANT...
plan=$1; shift
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
for v in "$@"; do
  python3 -c "
import json
from pathlib import Path
from pipelines.runner import make_inputs
p = json.load(open('$plan/$v/plan.json'))
c = next(c for c in p['cases'] if (c['problem']['m'], c['problem']['n'], c['problem']['dtype'], c['problem']['layout']) == (8192, 8192, 'bf16', 'nt'))
folder = Path('/tmp/in_' + c['id']); folder.mkdir(exist_ok=True)
print('$plan/$v/' + c['vmfb'], *[f'--input={f}' for f in make_inputs(c, folder).files])
" > /tmp/case.txt
  read vmfb in_a in_b < /tmp/case.txt
  timeout 100 ncu --csv --metrics dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct \
    --launch-skip 2 --launch-count 1 --cache-control none --clock-control base $tool --module=$vmfb --device=cuda \
    --function=gemm $in_a $in_b --benchmark_min_time=1x > $OUT/ncu_$v.csv 2>> $OUT/err.txt || echo "ncu $v stopped" >> $OUT/err.txt
done
