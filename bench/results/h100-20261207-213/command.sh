# Run 213: on an H200 (the issue's card, none since run 205) first the v4 bench with transformers
# under the current rule. Then ncu (--clock-control none) of the rows kernel at 16 rows, the reading
# run 212's 40 launches did not reach: `bench --layers C --batches 1 --verify 16`, the first 8
# rows-kernel launches (the 64-row small sites) skipped, the next 14 (verify 16's rounds) profiled.
# Then an A/B of two row thresholds, each arm's per-site times (linears and hc_pre) per round:
#   hc2 / hc16  MEMRA_CUDA_HC_MIX_FROM=2 / 16: hc_pre's rms once per row and the 16-rows-a-block mix
#               from 2 / 16 rows instead of 64 (under 64 each of a row's 32 slice blocks re-reads
#               the row's 64 KB of streams for its rms; hc_pre reads 20-25 us at 6-16 rows, 35 at 32,
#               29 at 64: run 210);
#   pr16        MEMRA_CUDA_LINEAR_PER_ROW_ROWS=16 MEMRA_CUDA_LINEAR_PER_ROW=8192: per-row GEMVs up to
#               16 rows and 8192 warps (the router 9.5 us at 8 rows per row, 14.4 at 16 in the rows
#               kernel: run 210);
#   r16         MEMRA_CUDA_LINEAR_ROWS16=9: the rows kernel's 16-row blocks (4 outputs a warp, one
#               block an SM) from 9 rows: each decoded weight serves 16 rows.
# The same ncu with r16's setting (the 16-row blocks' instructions, stalls and occupancy). Then ops
# mhc by bits with the many-row mix from 2 rows, ops linear. The pack built at the commit that adds
# the three switches.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then v4_bench 40; fi
NCU_TIMEOUT=110 ncu_kernels rows16 linear_exact_rows_kernel 8 14 bench --layers C --contexts 2048 --batches 1 \
  --verify 16 --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json
MEMRA_CUDA_LINEAR_ROWS16=9 NCU_TIMEOUT=110 ncu_kernels rows16-rb16 linear_exact_rows_kernel 8 14 bench --layers C \
  --contexts 2048 --batches 1 --verify 16 --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json
AB_SITES='linear_exact|hc_pre' ab_linear 5 base='' hc2='MEMRA_CUDA_HC_MIX_FROM=2' hc16='MEMRA_CUDA_HC_MIX_FROM=16' \
  pr16='MEMRA_CUDA_LINEAR_PER_ROW_ROWS=16 MEMRA_CUDA_LINEAR_PER_ROW=8192' r16='MEMRA_CUDA_LINEAR_ROWS16=9'
MEMRA_CUDA_HC_MIX_FROM=2 timeout 90 "$t" ops --only mhc > "$OUT/ops-mhc-from2.txt" 2>&1
echo "ops mhc (HC_MIX_FROM=2) rc=$? $(tail -1 "$OUT/ops-mhc-from2.txt")"
ops_bits linear
el
