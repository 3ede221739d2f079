# Run 126: (1) A/B, three passes: the router and route at the device's highest launch priority
# (MEMRA_CUDA_ROUTE_PRIORITY: def = 1, p0 = none, p2 = the routed experts too; run 125's marks: route
# ended with the shared expert's w3, 11.6 us after the router, its one block waiting for a slot),
# graph marks; (2) the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on this tree, in check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ARMS=(def='' p0='MEMRA_CUDA_ROUTE_PRIORITY=0' p2='MEMRA_CUDA_ROUTE_PRIORITY=2')
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | grep -v prefill -A0 | head -48; el
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
