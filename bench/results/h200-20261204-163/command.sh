# Run 163: hc_pre scales cuda-fast's GEMM mix by the row's rms inside its fused norm kernel (the sum of
# squares from the stream values it loads anyway; HcPreArgs::mix_unscaled), hc_mix_finish's extra
# read of X gone (MEMRA_CUDA_HC_MIX_FUSED=0 for A/B). ops mhc, and against a library whose fused
# kernel does not write the scaled mix back (planted_fuse: the Sinkhorn lines must FAIL); the
# chunk-semantics gates; an A/B of the prefill (5 passes); then the whole tools/gpu-check.sh
# (GPU_CHECK_FRESH=1: ops, backend, gates, speculative, fresh oracle cases, bandwidth, the V4-Flash
# bench beside transformers, memcheck / racecheck) in check.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  timeout 150 $t ops --only mhc --seed 163 > /tmp/ops-mhc.txt 2>&1; echo "ops mhc rc=$?" >> /tmp/ops-mhc.txt
  grep -E "^FAIL|checks|rc=|unscaled" /tmp/ops-mhc.txt | cut -c1-200 | sed "s/^/mhc: /"
  lib_arm planted_fuse; LD_LIBRARY_PATH=/tmp/planted_fuse/bin timeout 150 $t ops --only mhc --seed 163 > /tmp/pl-fuse.txt 2>&1
  echo "planted_fuse mhc rc=$?"; grep -E "^FAIL|checks" /tmp/pl-fuse.txt | cut -c1-200 | sed "s/^/planted_fuse: /"; el
  for model in tiny-bf16 tiny-fp8; do for p in 66 160; do
    timeout 60 $m -q gate semantics models/$model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics $model $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
cp /tmp/ops-mhc.txt /tmp/pl-fuse.txt $OUT/ 2>/dev/null
ARMS=(new='' finish='MEMRA_CUDA_HC_MIX_FUSED=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -11; el
tar -cJf $OUT/ab.tar.xz -C /tmp ab
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
