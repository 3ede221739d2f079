# Run 215: the issue's card. The v4 bench with transformers on an H200 under the current rule (the
# last H200 bench was run 205's, two rule changes ago; transformers' batch 32 needs more than an
# H100's 80 GB, so its "5x transformers at batch 32" line can only be read there), then run 214's A/B
# of the new thresholds against the old (three passes). Asked for with needs_h200.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
v4_bench 40
AB_SITES='linear_exact|hc_pre|attention' ab_linear 3 base='' old='MEMRA_CUDA_HC_MIX_FROM=64 MEMRA_CUDA_LINEAR_PER_ROW_ROWS=8'
