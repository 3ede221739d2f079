# Run 173: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on session 43's final kernels (the
# indexer's staging mended twice, the 16-head form gone), in check.tar.gz: issue 13's table (with
# the speculative lines as f9d37e0 projects them: tau at the verify's own drafts, re-runs charged). First, what one layer more costs: `memra bench` at --layers CH
# and CHCH, two passes, interleaved, read by bench/marginal.py (a step's ends weigh on each of CH's
# two layers; ~100 s). Then the gpu-check with the rest of the call, and with any seconds left, ncu (--set full, --clock-control none) of the prefill's tensor-core attention and
# indexer scores on the CSA layer.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
OUT_MAIN=$OUT; mkdir -p /tmp/check
MA="--json --contexts 2048 --batches 8,32 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 3"
for pass in 1 2; do for layers in CH CHCH; do
  [ $(( $(date +%s) - T0 )) -lt 110 ] || break 2
  timeout 45 $m bench --layers $layers $MA > $OUT_MAIN/marginal-$layers-$pass.json 2> /tmp/marginal-$layers-$pass.err
  echo "bench $layers pass $pass rc=$?"; done
  python3 bench/marginal.py $OUT_MAIN/marginal-CH-$pass.json $OUT_MAIN/marginal-CHCH-$pass.json; done; el
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
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
