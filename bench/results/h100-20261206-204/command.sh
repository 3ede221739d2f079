# Run 204: the default tile choice (e3da4fc: 32-row blocks where that grid gives every SM three
# blocks, else 16) on a GPU for the first time. Arms `hyb` (the default), `k16`
# (MEMRA_CUDA_LINEAR_GEMM_TILE=16), `k32` (MEMRA_CUDA_LINEAR_GEMM_TILE=32) against `base` (run 202's
# kernels: linear_exact.cu at 678a47e's parent, carried as build-gpu-pack/base): `memra bench
# --timeline` at 2 layers (decode 2k, batches 8/32/64, verify 6/16), arms interleaved, three
# passes, per-arm medians (bench/ab_medians.py). Then, the default's: ops linear by bits, under
# memcheck, backend tiny, the v4 bench with transformers, and the whole gpu-check in what is left
# of LIMIT (this session's device time was short: nine refused starts before this call).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm base
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 60 --sites linear_exact $m /tmp/ab "$BA" \
  hyb='' k16='MEMRA_CUDA_LINEAR_GEMM_TILE=16' k32='MEMRA_CUDA_LINEAR_GEMM_TILE=32' base='bin=/tmp/base/bin' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/ab_medians.py --sites linear_exact /tmp/ab hyb,k16,k32 | tee $OUT/medians.txt
el
ops_bits linear
memcheck_ops linear
timeout 120 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
el
v4_bench 40
whole_check 80
