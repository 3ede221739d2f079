# Run 90: hc_pre + norm in one launch (HC_NORM_FUSED) and wo_a → wo_b in one persistent launch
# (LINEAR_PAIR), on top of the review mend 0d8f5a1 (first GPU run of it). Tests: ops (every group),
# planted lib (hc_pre_norm never zeroes its counters; linear_pair skips a group's first output after
# an odd group) on ops mhc + linear, backend tiny / tiny-bf16. Bench A/B in one binary, two passes:
# def (both on), hc0 (MEMRA_CUDA_HC_NORM_FUSED=0), lp0 (MEMRA_CUDA_LINEAR_PAIR=0), off (both off:
# session 29's launches), pf64 (MEMRA_CUDA_LINEAR_PAIR_PREFETCH=64), with the timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 170 $t ops --seed 90 2>&1 | grep -E "FAIL|checks|linear_pair|hc_pre \+ norm" | cut -c1-230
  for g in mhc linear; do LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only $g --seed 90 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -8; done
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --timeline"
bash bench/ab_arms.sh --passes 2 --timeout 80 --sites 'hc_pre|norm|wo_a|wo_b|linear_pair' $m /tmp/ab "$BA" \
  def='' hc0='MEMRA_CUDA_HC_NORM_FUSED=0' lp0='MEMRA_CUDA_LINEAR_PAIR=0' off='MEMRA_CUDA_HC_NORM_FUSED=0 MEMRA_CUDA_LINEAR_PAIR=0' \
  pf64='MEMRA_CUDA_LINEAR_PAIR_PREFETCH=64' > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
