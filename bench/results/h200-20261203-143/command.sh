# Run 143: the tensor-core prefill attention's fourth form (after run 142's ncu: pass 2 32% waiting
# on its key loads, ~6 k instructions of RoPE inlined at every output pair, q's staging loads one at
# a time): pass 2's ring six k-steps deep with its first five asked for before the softmax, the
# inverse RoPE back to one block-wide loop after the stores, q's staging loop unrolled. ops attention,
# an A/B of the prefill against run 142's form (v3) and 2433ca9's WMMA kernel (old), a timeline, ncu.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm v3; lib_arm old
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 143 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|cuda-fast" /tmp/ops.txt | cut -c1-220 | sed "s/^/attention: /"; cat /tmp/ops.rc; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' v3='bin=/tmp/v3/bin' old='bin=/tmp/old/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -14; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 30 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -14; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 120 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_fast' --launch-count 1 --set full --import-source no -o $OUT/fast $m bench --layers C --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
$NCU -i $OUT/fast.ncu-rep --page details > $OUT/ncu-details.txt 2>&1
grep -E "Duration|Registers Per|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Executed Ipc A|Issue Slots|No Eligible" $OUT/ncu-details.txt | head -12
$NCU -i $OUT/fast.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; xz -T4 $OUT/ncu-source.csv; rm -f $OUT/fast.ncu-rep; el
