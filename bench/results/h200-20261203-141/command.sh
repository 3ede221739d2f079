# Run 141: run 140's tensor-core prefill attention (v1) after its ncu: the TF32 rounding of the
# B operands in four integer instructions instead of cvt.rna's branch (ncu: 32% "no instruction"),
# the softmax four head rows a warp side by side, pass 2's loads two batches ahead (a ring of
# three) and its output columns remapped for one full 64-byte run a head row and store. ops
# attention on this tree and under a planted library (pass 2's B columns in v1's mapping against
# this form's outputs), an A/B of the prefill against v1, one prefill's timeline, ncu of the CSA launch.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm v1; lib_arm planted
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 141 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|cuda-fast" /tmp/ops.txt | cut -c1-220 | sed "s/^/attention: /"; cat /tmp/ops.rc; el
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only attention --seed 141 > /tmp/planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/planted.txt | cut -c1-220 | sed "s/^/planted: /" | tail -12; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' v1='bin=/tmp/v1/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -12; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 30 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -14; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 120 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_fast' --launch-count 1 --set full --import-source no -o $OUT/fast $m bench --layers C --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
$NCU -i $OUT/fast.ncu-rep --page details > $OUT/ncu-details.txt 2>&1
grep -E "Duration|Registers Per|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Executed Ipc A|Issue Slots|No Eligible" $OUT/ncu-details.txt | head -12
$NCU -i $OUT/fast.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; xz -T4 $OUT/ncu-source.csv; rm -f $OUT/fast.ncu-rep; el
