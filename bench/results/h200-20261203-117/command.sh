# Run 117: launch priorities for small kernels' chains beside long kernels (MEMRA_CUDA_PRIORITY, a
# comma list: shared, idxkv, cmpkv, wq_a; unset = none). Run 116's graph marks: at verify 6 / 16 and
# batch 8 / 32 the shared expert's w2 ended 11-22 us after the routed experts (its kernels queued
# behind theirs), the indexer compressor's close took 30 us at verify 6 (on the attention's path),
# and C's wq_a took 30-83 us beside the compressors' linears against 13-24 at H.
# Also compressor_close with each pooled row's source found once per block (form 0) instead of per
# channel and pass (form 1, MEMRA_CUDA_CLOSE_FORM=1): ncu put the close at 24-26 us (run 83).
# ops linear and compressor on this tree (the session-33 commits not yet run on a GPU), ops
# compressor under a planted library (the close's sums in reverse order, both paths), A/B three
# passes with graph marks, a timeline of one prefill, then ncu of the rows kernel if time is left.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
  timeout 90 $t ops --only linear --seed 117 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | tail -3
  timeout 60 $t ops --only compressor --seed 117 2>&1 | grep -E "compressor|FAIL|checks" | cut -c1-220 | tail -6
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only compressor --seed 117 2>&1 | grep -E "compressor|FAIL|checks" | cut -c1-220 | tail -6 | sed 's/^/planted: /'; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
K=MEMRA_CUDA_PRIORITY
ARMS=(def='' sh="$K=shared" ik="$K=idxkv" ikc="$K=idxkv,cmpkv" qa="$K=wq_a" all="$K=shared,idxkv,cmpkv,wq_a" close1='MEMRA_CUDA_CLOSE_FORM=1')
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
for a in "${ARMS[@]}"; do a=${a%%=*}; python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -80; el
timeout 60 $m bench --timeline --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.txt 2>&1
sed -n '/^timeline prefill/,/^timeline decode/p' $OUT/timeline.txt | head -40; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
left=$(( ${LIMIT:-400} - ( $(date +%s) - T0 ) - 10 ))
if [[ -n "$NCU" && $left -gt 60 ]]; then
  S="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section InstructionStats --section MemoryWorkloadAnalysis"
  timeout $left $NCU --clock-control none --kernel-name-base demangled -k 'regex:linear_exact_rows_kernel' --launch-count 12 $S \
    $m bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json > $OUT/ncu-rows.txt 2>&1
  echo "ncu rc=$?"; grep -E "linear_exact_rows|Duration|DRAM Throughput|Issue Slots Busy|Eligible Warps|Warp Cycles Per Issued|Registers Per|Achieved Occ|Stall" $OUT/ncu-rows.txt | head -60
fi; el
