# Run 172: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on this session's final kernels (the
# indexer's staging mended twice, the 16-head form gone), in check.tar.gz: issue 13's table. Then,
# with the seconds left, ncu (--set full, --clock-control none) of the prefill's two heaviest
# non-cuBLAS kernels on the CSA layer: the tensor-core attention and the indexer's scores.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 100 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
BB="--contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json"
for k in attention_fast_kernel indexer_fast_kernel; do
  left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 10 )); [ $left -gt 30 ] || break
  timeout $left $NCU --clock-control none --kernel-name-base demangled -k regex:$k --launch-count 1 --set full --import-source no -o /tmp/$k $m bench --layers C $BB > /dev/null 2>&1
  $NCU -i /tmp/$k.ncu-rep --page details > $OUT_MAIN/$k-details.txt 2>&1
  grep -E "Duration|Registers Per|Executed Ipc A|Issue Slots|No Eligible|Achieved Occ|DRAM Throughput|L2 Cache Throughput" $OUT_MAIN/$k-details.txt | head -10; el
done
