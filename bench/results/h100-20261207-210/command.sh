# Run 210: runs 207-209's linear rule on the card that came (asked for as the H200, the issue's card;
# none came in session 58). Arms `base` (the default: the rows kernel at every 2-32-row round, the
# register-tiled form from 33 rows) and `old` (MEMRA_CUDA_LINEAR_ROWS=15 MEMRA_CUDA_LINEAR_GEMM=16:
# the rule before run 207): `memra bench --timeline` at 2 layers, interleaved, four passes, per-arm
# medians and every linear site per round. Then ops linear by bits under the default, the v4 bench with
# transformers, and the whole gpu-check in what is left of LIMIT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ab_linear 4 base='' old='MEMRA_CUDA_LINEAR_ROWS=15 MEMRA_CUDA_LINEAR_GEMM=16'
ops_bits linear
el
if [ "$(left)" -gt 120 ]; then v4_bench 40; else echo "v4 bench skipped: $(left) s of LIMIT left"; fi
if [ "$(left)" -gt 90 ]; then whole_check 80; else echo "whole check skipped: $(left) s of LIMIT left"; fi
