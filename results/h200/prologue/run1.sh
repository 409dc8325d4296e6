# The workgroup-timeline probe (gen.py, timeline.py). On the GPU machine, from the repository root, with .plans/pro
# (`python results/h200/prologue/gen.py .plans/pro`) and .whl/ carried:
#   bash results/h200/prologue/run1.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
timeout 200 python3 results/h200/prologue/timeline.py .plans/pro > $OUT/timeline.jsonl 2>> $OUT/err.txt \
  || echo "timeline stopped ($?)" >> $OUT/err.txt
