python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
nvidia-smi -L > $OUT/gpu.txt
for d in .plan/hf/p*/; do timeout 45 python3 results/h100/hopper/hopper_gemm.py run $d --repetitions 3 >> $OUT/rows.jsonl 2>>$OUT/err.txt || echo "$d timed out or failed" >> $OUT/err.txt; done
tail -5 $OUT/err.txt
python3 -c "
import json
for l in open('$OUT/rows.jsonl'):
    r=json.loads(l); print(r['problem'], 'default', r['default']['correct'], round(r['default'].get('tflops',0)), 'cublas', round(r['cublas'].get('tflops',0)))
    for h in r['hopper']: s=h['schedule']; print('   ', s['kind'], s['persistent'], s['block_m'], s['block_n'], s['stages'], h['correct'], '%.2e'%h['max_rel_error'], round(h.get('tflops') or 0), h['error'])
"
