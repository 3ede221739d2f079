# Run 209: the rows kernel at 64 rows too, and two outputs a warp in it. Run 208 made the rows kernel
# the form for every 16-32-row round (verify 16 −1.7%, batch 32 +2.3%); at 64 rows the register-
# tiled form still runs wq_b / wo_a / wo_b (184 / 162 / 163 us a layer) and the shared expert. Arms
# `base` (the default since run 208), `g65` (MEMRA_CUDA_LINEAR_GEMM=65: the rows kernel at 64 rows
# too) and `k2` (MEMRA_CUDA_LINEAR_TILED=2: two outputs a warp wherever the rows or tiled kernel
# runs, instead of the grid's 4 / 2 / 1): `memra bench --timeline` at 2 layers, interleaved, four
# passes, per-arm medians and every linear site per round. Then ops linear by bits under g65 and k2,
# the v4 bench with transformers under the default (run 208's g33 ran in none), and the whole
# gpu-check in what is left of LIMIT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 4 --timeout 60 --sites linear_exact $m /tmp/ab "$BA" \
  base='' g65='MEMRA_CUDA_LINEAR_GEMM=65' k2='MEMRA_CUDA_LINEAR_TILED=2' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/ab_medians.py --sites linear_exact --per-site linear_exact /tmp/ab base,g65,k2 | tee $OUT/medians.txt
el
MEMRA_CUDA_LINEAR_GEMM=65 timeout 60 $t ops --only linear > $OUT/ops-linear-g65.txt 2>&1
echo "ops linear (GEMM=65) rc=$? $(tail -1 $OUT/ops-linear-g65.txt)"
MEMRA_CUDA_LINEAR_TILED=2 timeout 60 $t ops --only linear > $OUT/ops-linear-k2.txt 2>&1
echo "ops linear (TILED=2) rc=$? $(tail -1 $OUT/ops-linear-k2.txt)"
el
left() { echo $(( ${LIMIT:-560} - ($(date +%s) - T0) )); }
if [ "$(left)" -gt 120 ]; then v4_bench 40; else echo "v4 bench skipped: $(left) s of LIMIT left"; fi
if [ "$(left)" -gt 90 ]; then whole_check 80; else echo "whole check skipped: $(left) s of LIMIT left"; fi
