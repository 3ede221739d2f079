# Run 123: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on this session's tree (ca22ed7: the
# compressor close's resolved rows, hc_pre's many-row mix kernel, the indexer's chunks a block,
# norm_rope a warp per segment, embed_rows a block per row), its results in check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
