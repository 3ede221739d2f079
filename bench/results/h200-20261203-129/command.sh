# Run 129: the review mends of session 35 (norm_row.cuh's norm_cached shared by norm_row and
# hc_pre_norm_kernel; route's rank_among shared by its two forms): ops norm / mhc / topk / moe, the
# backend on tiny-bf16, and a short A/B (def vs MEMRA_CUDA_HC_PRE_FUSED=0, two passes, graph marks):
# the decode hash must stay 383647b2373a and hc_pre ~7.8 us a site.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in norm mhc topk moe; do timeout 90 $t ops --only $g --seed 129 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -3 | sed "s/^/$g: /"; done
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' hf0='MEMRA_CUDA_HC_PRE_FUSED=0')
BA="bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 2 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^prefill/p' | head -30
python3 bench/graph_marks.py /tmp/ab/def1.json --lines decode --top 40 2>&1 | grep -E "decode|hc_pre|route" | head -12; el
