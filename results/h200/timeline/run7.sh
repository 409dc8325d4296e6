# gen_cluster.py's plan timed by the runner beside cuBLAS, twice (README.md). On the GPU machine, from the
# repository root, with .plans/clu and .whl/ carried:   bash results/h200/timeline/run7.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L >> $OUT/gpu.txt
for round in 1 2; do
  timeout 250 python3 -m pipelines.runner .plans/clu --device cuda --repetitions 3 > /dev/null 2>> $OUT/err.txt \
    || echo "runner stopped ($?)" >> $OUT/err.txt
  mv .plans/clu/results.jsonl $OUT/clu$round.jsonl
done
