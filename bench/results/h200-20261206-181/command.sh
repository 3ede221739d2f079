# Run 181: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) with its full budget (run 179's gave it
# 490 s and the backend's racecheck ran out), on the code after run 180 (the experts' large list
# default as run 180 chose), in check.tar.gz: issue 13's table.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
whole_check 60
