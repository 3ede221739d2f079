# Run 98: the final tree of session 30 (hc_pre with the sublayer norm, the indexer chain at the
# highest launch priority, graph marks, the grid-barrier ceiling): the whole tools/gpu-check.sh
# (GPU_CHECK_FRESH=1), its results in check.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
OUT_MAIN=$OUT; mkdir -p /tmp/check
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=${LIMIT:-560} bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
