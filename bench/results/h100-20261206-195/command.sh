# Run 195: what bounds the large expert groups at batch 64 (run 194: not their weights' latency).
# ncu (--clock-control none) of the experts' stage kernels of one batch-64 step of one CSA layer:
# SpeedOfLight, MemoryWorkloadAnalysis (L1 / shared wavefronts, L2, DRAM), Occupancy, LaunchStats,
# WarpStateStats (stall reasons), SourceCounters; then the details page as text.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
timeout 150 $NCU --clock-control none --kernel-name-base demangled -k regex:moe_stage --launch-count 24 \
  --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
  --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
  -o /tmp/moe $m bench --layers C --contexts 2048 --batches 64 --verify 6 \
  --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > /dev/null 2> /tmp/ncu.err
echo "ncu rc=$?"; tail -3 /tmp/ncu.err
$NCU -i /tmp/moe.ncu-rep --page details > /tmp/moe-details.txt 2>&1
xz -9 < /tmp/moe-details.txt > $OUT/moe-details.txt.xz
grep -E "moe_stage|Duration|DRAM Throughput|L1/TEX Hit|L1/TEX Cache Throughput|Mem Pipes Busy|Grid Size|Registers Per|Achieved Occ|Issue Slots Busy|Stall|Warp Cycles Per Issued" /tmp/moe-details.txt | head -120
el
