# Run 125: route's candidate form (form 0; ncu run 124: form 1's all-pairs count was ~3.8 of its
# 6.75 us) and hc_pre_norm_kernel (with the Sinkhorn apart: the collapse's stream loads and the norm's
# weights beside the mix's gather, the collapsed values kept in registers for the norm). ops topk /
# mhc / moe on this tree, topk and mhc under a planted library (form 0's tie rule reversed; the fused
# collapse's chain reversed); backend on tiny-bf16; A/B three passes (def, r1: route form 1, hf0:
# hc_pre_kernel, old: both) with graph marks; ncu of the two kernels.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in topk mhc moe; do timeout 90 $t ops --only $g --seed 125 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -3 | sed "s/^/$g: /"; done
  for g in topk mhc; do LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only $g --seed 125 2>&1 | grep -E "^FAIL|checks" | cut -c1-160 | tail -14 | sed "s/^/planted $g: /"; done
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' r1='MEMRA_CUDA_ROUTE_FORM=1' hf0='MEMRA_CUDA_HC_PRE_FUSED=0' old='MEMRA_CUDA_ROUTE_FORM=1 MEMRA_CUDA_HC_PRE_FUSED=0')
BA="bench --json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -70; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats"
timeout 120 $NCU --clock-control none --kernel-name-base demangled -k 'regex:route_kernel|hc_pre_norm_kernel|hc_pre_kernel' --launch-count 6 $S \
  $t ops --only mhc --seed 125 > /tmp/ncu1.txt 2>&1
timeout 60 $NCU --clock-control none --kernel-name-base demangled -k 'regex:route_kernel' --launch-count 4 $S $t ops --only topk --seed 125 > /tmp/ncu2.txt 2>&1
cat /tmp/ncu1.txt /tmp/ncu2.txt > $OUT/ncu.txt
grep -E "^  [a-z].*\(|Duration|Registers Per|Executed Ipc A" $OUT/ncu.txt | sed 's/memra::cuda::<unnamed>:://' | cut -c1-120 | head -40; el
