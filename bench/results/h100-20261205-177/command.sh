# Run 177: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on sessions 46-47's code (the state's
# mutable buffers end to end: a mark one copy a device; one copy of the synthetic weights a process),
# in check.tar.gz: issue 13's table with the round's measured costs and the 4-layer bench's line.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -60; el
