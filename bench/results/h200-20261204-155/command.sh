# Run 155: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on 56dfc85 (runs 150-152: the HCA close
# split by channels, hc_post four elements a thread, hc_pre's many-row mix and Sinkhorn, the tiled
# indexer), in check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
