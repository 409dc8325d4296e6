# Block a's timeline in one process (trace.py) and the cycles of its two product shapes, ours and cuBLAS's (README.md).
# On the GPU machine, from the repository root, with .plans/b16, .plans/mid and .whl/ carried:
#   bash results/h200/timeline/run2.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
python3 tools/transformer_block.py data /tmp/data_a --rows 4096 --width 2048 --mlp 8192
timeout 200 python3 results/h200/timeline/trace.py /tmp/data_a .plans/b16/a/head.vmfb 30 $OUT/trace_a.json >> $OUT/log.txt 2>> $OUT/err.txt \
  || echo "trace stopped ($?)" >> $OUT/err.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
metrics=gpu__time_duration.sum,gpc__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum
python3 - <<'PY' > /tmp/cases.txt
import json
for c in json.load(open(".plans/mid/plan.json"))["cases"]:
    (m, k), (_, n) = c["input_shapes"]
    print(c["id"], f"{m}x{k}xf16", f"{k}x{n}xf16", c["vmfb"])
PY
while read id ina inb vmfb; do
  timeout 60 ncu --csv --metrics $metrics --launch-skip 10 --launch-count 4 --cache-control none --clock-control none \
    $tool --module=.plans/mid/$vmfb --device=cuda --function=gemm --input=$ina=1 --input=$inb=1 \
    --benchmark_min_time=0.01s > $OUT/ncu_$id.csv 2>> $OUT/err.txt || echo "ncu $id stopped ($?)" >> $OUT/err.txt
done < /tmp/cases.txt
timeout 60 ncu --csv --metrics $metrics --launch-skip 2 --launch-count 12 --cache-control none --clock-control none \
  python3 results/h200/timeline/cublas.py > $OUT/ncu_cublas.csv 2>> $OUT/err.txt || echo "ncu cublas stopped ($?)" >> $OUT/err.txt
timeout 200 python3 -m pipelines.runner .plans/mid --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
  || echo "runner stopped ($?)" >> $OUT/err.txt
cp .plans/mid/results.jsonl $OUT/mid.jsonl
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/gpu.txt
