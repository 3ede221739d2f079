# Run 197: the whole gpu-check (tools/gpu-check.sh, GPU_CHECK_FRESH=1) on the session's final
# kernels (a0c3e54: expert groups of at most 4 rows; later commits change comments, notes and
# results), as check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
whole_check 70
