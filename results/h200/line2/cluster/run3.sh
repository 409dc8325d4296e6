# The serpentine-K probe (gen_field.py's serpentine_k plan .plans/cl3): the runner on c21 and c21k in turn,
# two rounds, cuBLAS beside each problem; joules per product (energy.py) on 8192³ bf16 NN/NT and f16 NN, 4 s each, two rounds; then
# Nsight Compute's L2 and DRAM bytes of one launch of each on 8192³ bf16 NT.
# On the GPU machine, with .plans/cl3 and .whl/ carried: bash results/h200/line2/cluster/run3.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in 1 2; do
  for v in c21 c21k; do
    timeout 130 python3 -m pipelines.runner .plans/cl3/$v --device cuda --repetitions 3 > /dev/null \
      2>> $OUT/err.txt || echo "$v round $round: runner stopped ($?)" >> $OUT/err.txt
    cat .plans/cl3/$v/results.jsonl >> $OUT/$v.jsonl && rm .plans/cl3/$v/results.jsonl
  done
done
timeout 150 python3 results/h200/line2/cluster/energy.py .plans/cl3 c21 c21k --seconds 4 --problems 3 \
  > $OUT/energy.jsonl 2>> $OUT/err.txt || echo "energy stopped ($?)" >> $OUT/err.txt
bash results/h200/line2/cluster/ncu_bytes.sh .plans/cl3 c21 c21k
nvidia-smi --query-gpu=clocks.sm,power.draw,power.limit,temperature.gpu --format=csv >> $OUT/gpu.txt
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
