# Run 116: the rows kernel's forms (run 115's plan, which got no machine: MEMRA_CUDA_LINEAR_ROWS_FORM
# = SF, bf16 only; S = x staged through registers (0) or by cp.async (1), F = each step's weight
# loads conditional (0) or one clamped index (1); default 00), ops linear under each, A/B three
# passes with graph marks (f00 default, f01, f10, f11 (run 114's), tiled: MEMRA_CUDA_LINEAR_ROWS=0);
# then the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) on this tree, its results in check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
ARMS=(f00='' f01='MEMRA_CUDA_LINEAR_ROWS_FORM=01' f10='MEMRA_CUDA_LINEAR_ROWS_FORM=10' f11='MEMRA_CUDA_LINEAR_ROWS_FORM=11'
      tiled='MEMRA_CUDA_LINEAR_ROWS=0')
{ $m --version | head -1
  for arm in "${ARMS[@]}"; do
    env ${arm#*=} timeout 60 $t ops --only linear --seed 116 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed "s/^/${arm%%=*}: /" | tail -3
  done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
for a in "${ARMS[@]}"; do a=${a%%=*}; python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^batch 8/,/^prefill/p' | grep -E "^[a-z]|_1 |_2 |_3 "; el
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
