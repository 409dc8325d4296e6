# On the GPU machine, from the repository root: each kernel of one PyTorch call of the block (eager, then
# torch.compile), Nsight Compute's GPU time, as model_runner reads IREE's launches.
#   bash results/h100/torch-kernels/run.sh "a:4096:2048:8192 c:8192:1024:4096"
for spec in $1; do
  IFS=: read b rows width mlp <<< "$spec"
  [ -d /tmp/data_$b ] || python3 tools/transformer_block.py data /tmp/data_$b --rows $rows --width $width --mlp $mlp
  timeout ${LIMIT_S:-240} ncu --csv --metrics gpu__time_duration.sum --cache-control none --clock-control none --nvtx \
    --nvtx-include eager_last/ --nvtx-include compile_last/ \
    python3 results/h100/torch-kernels/torch_kernels.py /tmp/data_$b > $OUT/torch_kernels_$b.csv 2>> $OUT/err.txt \
    || echo "$b: ncu stopped ($?)" >> $OUT/err.txt
done
