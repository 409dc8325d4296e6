# The 8192^3 tile-order probe (README.md). On the GPU machine, from the repository root, with .plans/ord and .whl/
# carried:   bash results/h200/order/run.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
metrics=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_active.avg
python3 - <<'PY' > /tmp/cases.txt
import json
for c in json.load(open(".plans/ord/plan.json"))["cases"]:
    print(c["id"], c["problem"]["layout"], c["vmfb"])
PY
while read id layout vmfb; do
  timeout 60 ncu --csv --metrics $metrics --launch-skip 4 --launch-count 2 --cache-control none --clock-control none \
    $tool --module=.plans/ord/$vmfb --device=cuda --function=gemm --input=8192x8192xbf16=1 --input=8192x8192xbf16=1 \
    --benchmark_min_time=0.01s > $OUT/ncu_$id.csv 2>> $OUT/err.txt || echo "ncu $id stopped ($?)" >> $OUT/err.txt
done < /tmp/cases.txt
timeout 60 ncu --csv --metrics $metrics --launch-skip 2 --launch-count 10 --cache-control none --clock-control none \
  python3 results/h200/order/cublas.py > $OUT/ncu_cublas.csv 2>> $OUT/err.txt || echo "ncu cublas stopped ($?)" >> $OUT/err.txt
timeout 300 python3 -m pipelines.runner .plans/ord --device cuda --repetitions 3 > $OUT/runner.txt 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/ord/results.jsonl $OUT/ord.jsonl 2>> $OUT/err.txt
timeout 60 python3 results/h200/softmax/check.py .plans/softmax3/alone $OUT/alone.jsonl 2>> $OUT/err.txt \
  || echo "softmax check stopped ($?)" >> $OUT/err.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz ncu_*.csv && rm -f ncu_*.csv && mv /tmp/all.tgz ncu.tgz
