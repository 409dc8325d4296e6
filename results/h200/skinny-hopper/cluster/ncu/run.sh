# Nsight Compute kernel durations of two 16x4096x4096 plans' cases (results/h200/skinny-hopper/cluster/ncu)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
which ncu >> $OUT/err.txt 2>&1 || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu >> $OUT/err.txt 2>&1
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
for v in $CASES; do
  timeout 120 ncu --csv --metrics gpu__time_duration.sum,sm__cycles_active.avg,dram__bytes_read.sum,launch__grid_size,launch__cluster_dim_x \
    --launch-skip 20 --launch-count 6 --cache-control none --clock-control none \
    $tool --module=.plans/p16c/$v --device=cuda --function=gemm --input=16x4096xbf16=1 --input=4096x4096xbf16=1 \
    --benchmark_min_time=0.05s > $OUT/ncu_$(dirname $v | tr / _).csv 2>> $OUT/err.txt || echo "ncu $v stopped ($?)" >> $OUT/err.txt
  $tool --module=.plans/p16c/$v --device=cuda --function=gemm --input=16x4096xbf16=1 --input=4096x4096xbf16=1 \
    --benchmark_min_time=0.3s --benchmark_repetitions=3 >> $OUT/bench.txt 2>&1
done
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
