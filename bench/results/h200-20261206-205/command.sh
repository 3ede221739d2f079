# Run 205: 8-row blocks where the grid is small. Arms `hyb` (the default: 32-row blocks where that
# grid gives every SM three blocks, else 16), `s8` (MEMRA_CUDA_LINEAR_GEMM_TILE=small8: the default,
# but 8-row blocks where it would take 16 and that grid is at most four blocks an SM: at 32 / 64 rows
# wo_b, shared w2, the LM head / shared w1 and w3; at 16 rows wo_a, and wo_b, which the tiled kernel
# runs today) and `k8` (MEMRA_CUDA_LINEAR_GEMM_TILE=8: 8-row blocks wherever the register-tiled
# kernel runs, 16 rows too); `a2` / `a4` (MEMRA_CUDA_ATTN_CLUSTER_ROWS=2 MEMRA_CUDA_ATTN_HEADS=2 / 4:
# rounds of 3-23 rows through the heads kernel, 2 / 4 heads a block, instead of the cluster kernel;
# batch 32 runs 32 rows through the 4-head form in 189 us, verify 16 its 16 through the cluster
# kernel in 175): `memra bench --timeline`
# at 2 layers (decode 2k, batches 8/32/64, verify 6/16), arms interleaved, four passes, per-arm
# medians (bench/ab_medians.py). Then ops linear by bits under each setting, memcheck, backend tiny,
# and, under s8 (exported) unless it lost batch 32 or verify 16, the v4 bench with transformers and
# the whole gpu-check in what is left of LIMIT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 4 --timeout 60 --sites linear_exact $m /tmp/ab "$BA" \
  hyb='' s8='MEMRA_CUDA_LINEAR_GEMM_TILE=small8' k8='MEMRA_CUDA_LINEAR_GEMM_TILE=8' \
  a2='MEMRA_CUDA_ATTN_CLUSTER_ROWS=2 MEMRA_CUDA_ATTN_HEADS=2' a4='MEMRA_CUDA_ATTN_CLUSTER_ROWS=2 MEMRA_CUDA_ATTN_HEADS=4' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/ab_medians.py --sites linear_exact /tmp/ab hyb,s8 | tee $OUT/medians.txt
el
ops_bits linear
for v in small8 8; do
  MEMRA_CUDA_LINEAR_GEMM_TILE=$v timeout 60 $t ops --only linear > $OUT/ops-linear-$v.txt 2>&1
  echo "ops linear (TILE=$v) rc=$? $(tail -1 $OUT/ops-linear-$v.txt)"
done
memcheck_ops linear
# s8 for the rest unless it lost batch 32 (tokens/s) or verify 16 (ms) by more than 0.3%: the rounds
# whose small grids it changes (batch 64 changes only shared w1 / w3)
if awk '$1 == "hyb" { b = $4; v = $7 } $1 == "s8" { sb = $4; sv = $7 }
        END { exit !(b && sb && sb >= 0.997 * b && sv <= 1.003 * v) }' $OUT/medians.txt; then
  export MEMRA_CUDA_LINEAR_GEMM_TILE=small8
fi
echo "the rest under MEMRA_CUDA_LINEAR_GEMM_TILE=${MEMRA_CUDA_LINEAR_GEMM_TILE:-(default)}"
timeout 120 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
el
v4_bench 40
whole_check 80
