# Prepared for the next GPU session (not run yet). On the GPU machine, with .whl/, .plans/sync
# (`python results/h200/line2/cluster/gen_sync.py .plans/sync`) and .plans/cl4 (README, run4) carried, gemm.mlir
# files deleted from both:
#   bash results/h200/line2/cluster/next.sh
# 1. stream-K's synchronization: one dispatch a call, inputs alternating, every call's C against float64
# 2. Nsight Compute's DRAM and L2 bytes and duration of one launch of the shipped kernel and of stream-K, 8192³ bf16
#    NT (the likely cause of stream-K's loss, run4, is DRAM traffic: measure it before building aligned runs)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 200 python3 results/h200/line2/cluster/sync_check.py .plans/sync/sk1 --calls 20 > $OUT/sync.jsonl \
  2>> $OUT/err.txt || echo "sync_check stopped ($?)" >> $OUT/err.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
for v in c21 c21sk; do
  python3 -c "
import json
from pathlib import Path
from pipelines.runner import make_inputs
p = json.load(open('.plans/cl4/$v/plan.json'))
c = next(c for c in p['cases'] if (c['problem']['m'], c['problem']['n'], c['problem']['dtype'], c['problem']['layout']) == (8192, 8192, 'bf16', 'nt'))
folder = Path('/tmp/in_' + c['id']); folder.mkdir(exist_ok=True)
print('.plans/cl4/$v/' + c['vmfb'], *[f'--input={f}' for f in make_inputs(c, folder).files])
" > /tmp/case.txt
  read vmfb in_a in_b < /tmp/case.txt
  timeout 100 ncu --csv --metrics dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct \
    --launch-skip 2 --launch-count 1 --cache-control none --clock-control base $tool --module=$vmfb --device=cuda \
    --function=gemm $in_a $in_b --benchmark_min_time=1x > $OUT/ncu_$v.csv 2>> $OUT/err.txt || echo "ncu $v stopped" >> $OUT/err.txt
done
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
