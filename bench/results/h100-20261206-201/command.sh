# Run 201: the whole gpu-check (tools/gpu-check.sh, GPU_CHECK_FRESH=1) on session 52's final code
# (main 33219ba), on the machine run 200 left warm, within the 616 s of device time left. Given
# inline as the call's command (this file records it):
set -uo pipefail
source bench/device_preamble.sh
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
LIMIT=560 whole_check 70
