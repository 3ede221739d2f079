# Run 203: the register-tiled linear with 32-bit-offset copies (678a47e) and threads of NJ rows × 4
# outputs (1c2ee38): arm `k4` (the default: 16-row blocks three an SM), `k44` (four an SM:
# MEMRA_CUDA_LINEAR_GEMM_16_PER_SM=4), `k4b` (32-row blocks: MEMRA_CUDA_LINEAR_GEMM_TILE=32), against
# the library before both (`base`: 067382c's parent kernels = run 202's, carried as
# build-gpu-pack/base). ops linear by bits under k44; `memra bench --timeline` at 2 layers (decode 2k,
# batches 8/32/64, verify 6/16), arms interleaved, three passes, per-arm medians (pick.py); then the
# whole gpu-check under the candidate arm of the most batch-64 tokens/s (its setting exported: the
# default's kernels when that arm is `k4`).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm base
MEMRA_CUDA_LINEAR_GEMM_16_PER_SM=4 timeout 60 $t ops --only linear > $OUT/ops-linear-k44.txt 2>&1; echo "ops linear (k44) rc=$? $(tail -1 $OUT/ops-linear-k44.txt)"
el
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 60 --sites linear_exact $m /tmp/ab "$BA" \
  k4='' k44='MEMRA_CUDA_LINEAR_GEMM_16_PER_SM=4' k4b='MEMRA_CUDA_LINEAR_GEMM_TILE=32' base='bin=/tmp/base/bin' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/results/run-203/pick.py /tmp/ab k4,k44,k4b | tee $OUT/pick.txt
el
case $(tail -1 $OUT/pick.txt) in
  "winner k44") export MEMRA_CUDA_LINEAR_GEMM_16_PER_SM=4 ;;
  "winner k4b") export MEMRA_CUDA_LINEAR_GEMM_TILE=32 ;;
esac
echo "whole check under: $(env | grep -E '^MEMRA_CUDA_LINEAR_GEMM_(16_PER_SM|TILE)=' || echo defaults)"
whole_check 80
