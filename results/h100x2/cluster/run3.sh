python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .whl2/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export CUDA_CACHE_DISABLE=1 PYTHONUNBUFFERED=1
nvidia-smi -L > $OUT/gpus.txt
for n in 1 2 s; do cp -r .plan/sweep64 /tmp/p$n; done
t0=$(date +%s.%N); python3 -m pipelines.runner /tmp/p1 --device cuda --gpus 1 --repetitions 3 2>$OUT/log1.txt; t1=$(date +%s.%N)
python3 -m pipelines.runner /tmp/p2 --device cuda --gpus 2 --repetitions 3 2>$OUT/log2.txt; t2=$(date +%s.%N)
python3 -m pipelines.runner /tmp/ps --device cuda --repetitions 3 2>$OUT/logs.txt; t3=$(date +%s.%N)
python3 -c "import json,sys; a,b,c,d=map(float,sys.argv[1:]); print(json.dumps({'1': b-a, '2': c-b, 'plain': d-c}))" $t0 $t1 $t2 $t3 > $OUT/wall.json
cp /tmp/p1/results.jsonl $OUT/results_1gpu.jsonl; cp /tmp/p2/results.jsonl $OUT/results_2gpu.jsonl; cp /tmp/ps/results.jsonl $OUT/results_plain.jsonl
python3 results/h100x2/cluster/cluster_sweep.py compare /tmp/p1 /tmp/p2 --wall $OUT/wall.json > $OUT/compare.md; cat $OUT/wall.json $OUT/compare.md
