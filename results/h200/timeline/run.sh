# PyTorch's kernels of block a, one by one in Nsight Compute, on an H200 (run1/; README.md). On the GPU machine, from
# the repository root, with .whl/ carried:   bash results/h200/timeline/run.sh
# (As run, the script first tried Nsight Systems timelines; the GPU machine has no nsys, and trace.py does that part.)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvidia-smi -L >> $OUT/gpu.txt
LIMIT_S=150 bash results/h100/torch-kernels/run.sh "a:4096:2048:8192"
