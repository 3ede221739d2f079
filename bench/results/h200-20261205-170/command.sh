# Run 170: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on main after gpu-pending's merge and the
# indexer staging's mend (lanes on eight pairs, RoPE turns once a block), in check.tar.gz: issue 13's
# table. Then, with the seconds left, an A/B of the indexer's staged RoPE against rope_only apart
# (MEMRA_CUDA_INDEXER_ROPE=0), three passes with timelines, summing the indexer's and rope_only's sites.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 90 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 10 ))
BA="bench --json --timeline --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
[ $left -gt 40 ] && timeout $left bash bench/ab_arms.sh --passes 3 --timeout 40 --sites 'indexer_scores|rope_only' $m /tmp/ab "$BA" new='' rope_apart='MEMRA_CUDA_INDEXER_ROPE=0' > $OUT_MAIN/ab.txt 2>&1
tail -12 $OUT_MAIN/ab.txt; el
