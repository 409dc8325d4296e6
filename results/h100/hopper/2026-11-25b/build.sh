# Build the 14 problems of this run here (iree-base-compiler 3.13.0, the repo's .venv): 4 schedules each, IREE's
# default for each problem, every dispatch repeated so that one call does ~2e13 FLOPs.
# Usage (repo root): bash results/h100/hopper/2026-11-25b/build.sh build/hopper-2026-11-25b
set -e
OUT=${1:-build/hopper-2026-11-25b}
S="--schedule cooperative-persistent:128x256x4x16x2 --schedule cooperative-persistent:128x256x4x8 --schedule pingpong:64x256x4x16 --schedule pingpong:64x256x4x16x2"
i=0
for spec in "bf16 4096x4096x4096 nt" "bf16 8192x8192x8192 nt" "f16 4096x4096x4096 nt" "f16 8192x8192x8192 nt" \
            "bf16 4096x4096x4096 nn" "bf16 8192x8192x8192 nn" "f16 4096x4096x4096 nn" "f16 8192x8192x8192 nn" \
            "bf16 6000x6000x6000 nt" "bf16 4000x12000x2000 nt" "bf16 10000x2560x7000 nt" \
            "bf16 6000x6000x6000 nn" "bf16 4000x12000x2000 nn" "bf16 10000x2560x7000 nn"; do
  set -- $spec
  i=$((i+1))
  .venv/bin/python results/h100/hopper/hopper_gemm.py build --shape $2 --dtype $1 --layout $3 $S --repeat-flops 2e13 \
      -o $OUT/p$(printf %02d $i) &
  if (( i % 7 == 0 )); then wait; fi
done
wait
