# Run 214: run 213's two thresholds as the default (hc_pre's many-row mix from 16 rows; per-row GEMVs
# up to 16 rows, 4096 warps). On an H200 first the v4 bench with transformers. Then an A/B at 2
# layers, per-site times (linears, hc_pre, attention) per round: `base` (the default) against `old`
# (MEMRA_CUDA_HC_MIX_FROM=64 MEMRA_CUDA_LINEAR_PER_ROW_ROWS=8: the rule before) and `h8`
# (MEMRA_CUDA_ATTN_HEADS=8: 8 heads a block at 11-63 rows instead of 4, 8 from 64; at 16 rows each
# key read by half as many blocks, 128 of them). Then ops mhc and linear by bits, the v4 bench on an
# H100, and the whole gpu-check in what is left. The pack built at the commit that sets the defaults.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
h200=0
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && h200=1
if [ "$h200" = 1 ]; then v4_bench 40; fi
AB_SITES='linear_exact|hc_pre|attention' ab_linear 4 base='' old='MEMRA_CUDA_HC_MIX_FROM=64 MEMRA_CUDA_LINEAR_PER_ROW_ROWS=8' \
  h8='MEMRA_CUDA_ATTN_HEADS=8'
ops_bits mhc
ops_bits linear
if [ "$h200" = 0 ]; then v4_bench 40; fi
if [ "$(left)" -gt 90 ]; then whole_check 80; else echo "whole check skipped: $(left) s of LIMIT left"; fi
