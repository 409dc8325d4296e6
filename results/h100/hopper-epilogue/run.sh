# On the GPU machine, from the repository root, with .plans/ (the plans and folders README.md's commands wrote here)
# and .whl/ (iree-base-runtime 3.13.0) carried along:
#   bash results/h100/hopper-epilogue/run.sh "ebf ef16"
# `pipelines inspect --jit`'s module on each folder under .plans/jit/ (the CLI itself needs the compiler, which this
# machine does not have), then the plans by ../hopper-route/run.sh (the runner, the GPU's clocks and power).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
for f in .plans/jit/*; do
  [ -d "$f" ] || continue
  python3 -c 'import json, sys, pathlib; from pipelines.jit_resources import jit_resources; print(json.dumps(jit_resources(pathlib.Path(sys.argv[1]))))' $f \
    >> $OUT/jit.jsonl 2>> $OUT/err.txt
done
bash results/h100/hopper-route/run.sh "${1:-ebf ef16}"
