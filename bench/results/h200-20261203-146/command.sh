# Run 146: the prefill attention's softmax in one pass over S (kernels/attention_fast.cu): pass 1
# keeps each warp's row maxima, the softmax stores p = exp(l·scale − mx) TF32-rounded and keeps
# 1 / denominator, which the outputs take (run 143's ncu: the softmax's three passes 21% of the
# stall samples). ops attention (the TF32 band), an A/B of the prefill against 62ffa5f's library
# (base), a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm base
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 146 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|cuda-fast" /tmp/ops.txt | cut -c1-220 | sed "s/^/attention: /"; cat /tmp/ops.rc; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' base='bin=/tmp/base/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -10; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 12 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -14; el
