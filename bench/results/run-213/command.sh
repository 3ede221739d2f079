# Run 213: ncu (--clock-control none) of the rows kernel at 16 rows, the reading run 212's 40 launches
# did not reach: `bench --layers C --batches 1 --verify 16`, the first 8 rows-kernel launches (the
# 64-row small sites) skipped, the next 14 (verify 16's rounds) profiled (ncu_kernels: details with
# every body item, the raw metrics). The pack rebuilt at 7f75dc8 (the code of 21fb153).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
NCU_TIMEOUT=110 ncu_kernels rows16 linear_exact_rows_kernel 8 14 bench --layers C --contexts 2048 --batches 1 \
  --verify 16 --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json
# On an H200 (the issue's card, none since run 205), the v4 bench with transformers under the current rule.
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then v4_bench 40; fi
