# Run 193: the whole gpu-check (tools/gpu-check.sh, GPU_CHECK_FRESH=1) on the session's final code
# (b935ed2: session 50's kernels, its review mends, the quick ops shape 2600 x 12), as check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
whole_check 70
