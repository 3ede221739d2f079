# Run 81: the review mend (GemmCopyPlan, one launch_gemm, bf16x2_f32): ops (every group), ops
# linear with the f32-staged form, backend tiny / tiny-bf16, racecheck of ops linear, and the bench
# at gpu_bench's repetitions (logits hashes, last sequence alone, floors).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 150 $t ops --seed 81 2>&1 | grep -E "FAIL|checks" | cut -c1-200
  MEMRA_CUDA_LINEAR_GEMM_RAW=0 timeout 60 $t ops --only linear --seed 81 2>&1 | grep -E "FAIL|checks" | sed 's/^/f32: /'
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -1; done
  timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed 81 2>&1 | grep -E "RACECHECK SUMMARY|checks" | tail -2
  timeout 120 $m bench --json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 2048 --reps 3 > /tmp/b.json 2>/tmp/b.err; echo "bench rc=$?"
  python3 bench/ab_summary.py final=/tmp/b.json
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt; cp /tmp/b.json $OUT/memra-bench.json
