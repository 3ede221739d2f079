# Run 215: on an H200 (the issue's card; the last H200 bench was run 205's, two rule changes ago, and
# transformers' batch 32 needs more than an H100's 80 GB, so its "5x transformers at batch 32" line
# can only be read there) the v4 bench with transformers under the current rule, then run 214's A/B
# of the new thresholds against the old (three passes). On an H100 instead, racecheck backend tiny
# --race on the final code: the one step of run 214's whole check its limit cut.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
if [[ $gpu == *H200* ]]; then
  v4_bench 40
  AB_SITES='linear_exact|hc_pre|attention' ab_linear 3 base='' old='MEMRA_CUDA_HC_MIX_FROM=64 MEMRA_CUDA_LINEAR_PER_ROW_ROWS=8'
else
  racecheck_backend models/tiny 200
fi
