# Run 112: ncu of the tiled few-row linear itself (run 111's binaries, warp_sum_many epilogue) at
# batch 8: every tiled launch of a short bench (wq_a, wq_b, wo_a, wo_b, the indexer's and the
# compressor's), with the instruction mix and the stall reasons at their SASS locations; then A/B
# (three passes, graph marks): def, p1 (4 outputs a warp, one lane step fetched ahead), pr8k / pr16k
# (the per-row GEMV for rows · outputs up to 8192 / 16384 warps: wq_a at 6-8 rows).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
S="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section InstructionStats --section SourceCounters"
timeout 240 $NCU --clock-control none --kernel-name-base demangled -k 'regex:linear_exact_tiled_kernel' --launch-count 24 $S \
  $m $NB > $OUT/ncu-tiled.txt 2>&1; echo "ncu rc=$?"; el
grep -E "linear_exact_tiled|Duration|DRAM Throughput|Executed Ipc A|Issue Slots Busy|Eligible Warps|Active Warps Per|Warp Cycles Per Issued|Executed Instructions  " $OUT/ncu-tiled.txt | head -150
K=MEMRA_CUDA_LINEAR
ARMS=(def='' p1="${K}_TILED_PRE4=1" pr8k="${K}_PER_ROW=8192" pr16k="${K}_PER_ROW=16384")
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
for a in "${ARMS[@]}"; do a=${a%%=*}; python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^batch 8/,/^prefill/p'; el
