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
bash results/h200/line2/cluster/ncu_bytes.sh .plans/cl4 c21 c21sk
cd $OUT && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz
