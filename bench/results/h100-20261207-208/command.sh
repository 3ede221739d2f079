# Run 208: the rows kernel at 16 rows for wq_b / wo_a too. Run 207 moved wo_b at 16 rows from the
# tiled kernel to the rows kernel (72 → 48 us a layer, H100); wq_b and wo_a, the same 67 MB of
# weights, still take the register-tiled form at 16 rows (59 / 60 us). Arms `base` (the default
# since run 207), `g17` (MEMRA_CUDA_LINEAR_GEMM=17: the register-tiled form from 17 rows, so every
# 16-row linear takes the rows kernel), `g33` (=33: up to 32 rows too) and `rb4`
# (MEMRA_CUDA_LINEAR_ROWS_RB4=1: the rows kernel in 4-row blocks where its 8-row grid has fewer
# blocks than SMs: the router, wkv, weights_proj, the compressor): `memra bench --timeline`
# at 2 layers, interleaved, four passes, per-arm medians and every linear site per round. Then ops
# linear by bits under g17, g33 and rb4, and the v4 bench with transformers under g17 and rb4, each
# exported if it won verify 16 and lost no batch by more than 0.3% (else the default), then the
# whole check if LIMIT leaves room.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 4 --timeout 60 --sites linear_exact $m /tmp/ab "$BA" \
  base='' g17='MEMRA_CUDA_LINEAR_GEMM=17' g33='MEMRA_CUDA_LINEAR_GEMM=33' \
  rb4='MEMRA_CUDA_LINEAR_ROWS_RB4=1' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/ab_medians.py --sites linear_exact --per-site linear_exact /tmp/ab base,g17,g33,rb4 | tee $OUT/medians.txt
el
for v in 17 33; do
  MEMRA_CUDA_LINEAR_GEMM=$v timeout 60 $t ops --only linear > $OUT/ops-linear-g$v.txt 2>&1
  echo "ops linear (GEMM=$v) rc=$? $(tail -1 $OUT/ops-linear-g$v.txt)"
done
MEMRA_CUDA_LINEAR_ROWS_RB4=1 timeout 60 $t ops --only linear > $OUT/ops-linear-rb4.txt 2>&1
echo "ops linear (ROWS_RB4=1) rc=$? $(tail -1 $OUT/ops-linear-rb4.txt)"
if awk '$1 == "base" { b = $4; c = $5; v = $7 } $1 == "g17" { gb = $4; gc = $5; gv = $7 }
        END { exit !(b && gb && gv < v && gb >= 0.997 * b && gc >= 0.997 * c) }' $OUT/medians.txt; then
  export MEMRA_CUDA_LINEAR_GEMM=17
fi
if awk '$1 == "base" { a = $3; b = $4; c = $5; v = $7 } $1 == "rb4" { ra = $3; rb = $4; rc = $5; rv = $7 }
        END { exit !(b && rb && rv < v && ra >= 0.997 * a && rb >= 0.997 * b && rc >= 0.997 * c) }' $OUT/medians.txt; then
  export MEMRA_CUDA_LINEAR_ROWS_RB4=1
fi
echo "the rest under MEMRA_CUDA_LINEAR_GEMM=${MEMRA_CUDA_LINEAR_GEMM:-(default)} MEMRA_CUDA_LINEAR_ROWS_RB4=${MEMRA_CUDA_LINEAR_ROWS_RB4:-(default)}"
el
left() { echo $(( ${LIMIT:-560} - ($(date +%s) - T0) )); }
if [ "$(left)" -gt 120 ]; then v4_bench 40; else echo "v4 bench skipped: $(left) s of LIMIT left"; fi
if [ "$(left)" -gt 300 ]; then whole_check 80; else echo "whole check skipped: $(left) s of LIMIT left"; fi
