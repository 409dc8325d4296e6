# Nsight Compute's full sections on the multi-head block's Q·Kᵀ (16x4096x4096x128 f16 NN, f16 C): ours on the batch
# rule's schedule (.plans/batch2, gen.py: its first case) and cuBLAS's (cublas.py). On the GPU machine, from the
# repository root, with .plans/batch2 and .whl/ carried:
#   bash results/h200/batch/run3.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
tool=$(python3 -c "from pipelines.runner import benchmark_tool; print(benchmark_tool())")
vmfb=$(python3 -c "import json; print(json.load(open('.plans/batch2/plan.json'))['cases'][0]['vmfb'])")
timeout 240 ncu --set full --launch-skip 5 --launch-count 1 --cache-control none --clock-control base \
  $tool --module=.plans/batch2/$vmfb --device=cuda --function=gemm --input=16x4096x128xf16=1 \
  --input=16x128x4096xf16=1 --benchmark_min_time=0.01s > $OUT/ncu_ours_qk.txt 2>> $OUT/err.txt \
  || echo "ncu ours stopped ($?)" >> $OUT/err.txt
timeout 240 ncu --set full -k regex:"nvjet|gemm|xmma|cutlass" --launch-skip 5 --launch-count 1 --cache-control none \
  --clock-control base python3 results/h200/batch/cublas.py > $OUT/ncu_cublas_qk.txt 2>> $OUT/err.txt \
  || echo "ncu cublas stopped ($?)" >> $OUT/err.txt
