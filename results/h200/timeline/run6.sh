# Nsight Compute's full sections on block a's W2 product (4096x2048x8192 f16 NN, f16 C): ours (.plans/mid, gen.py)
# and cuBLAS's (cublas.py). On the GPU machine, from the repository root, with .plans/mid and .whl/ carried:
#   bash results/h200/timeline/run6.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
vmfb=$(python3 -c "import json; print([c['vmfb'] for c in json.load(open('.plans/mid/plan.json'))['cases'] if c['problem']['k'] == 8192][0])")
timeout 200 ncu --set full --launch-skip 5 --launch-count 1 --cache-control none --clock-control base \
  $tool --module=.plans/mid/$vmfb --device=cuda --function=gemm --input=4096x8192xf16=1 --input=8192x2048xf16=1 \
  --benchmark_min_time=0.01s > $OUT/ncu_ours_w2.txt 2>> $OUT/err.txt || echo "ncu ours stopped ($?)" >> $OUT/err.txt
timeout 200 ncu --set full -k regex:nvjet --launch-skip 9 --launch-count 1 --cache-control none --clock-control base \
  python3 results/h200/timeline/cublas.py > $OUT/ncu_cublas_w2.txt 2>> $OUT/err.txt || echo "ncu cublas stopped ($?)" >> $OUT/err.txt
