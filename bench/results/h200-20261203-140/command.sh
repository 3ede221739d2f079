# Run 140: cuda-fast's prefill attention on mma.sync m16n8k8 TF32 (kernels/attention_fast.cu): the
# keys straight from global memory into the B fragments, q and p from conflict-free shared rows,
# 32-key tiles a warp (pass 1) and 32-dim output slices a warp (pass 2). ops attention on this tree
# (now with the fast kernel also at V4-Flash key counts and d = 256) and under a planted library
# (pass 2's keys 2t and 2t + 1 swapped against p), an A/B of the prefill against 2433ca9's library
# (old), one prefill's timeline, and ncu of the new kernel at the bench's 2048-row CSA prefill.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm old; lib_arm planted
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 140 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|cuda-fast" /tmp/ops.txt | cut -c1-220 | sed "s/^/attention: /"; cat /tmp/ops.rc; el
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only attention --seed 140 > /tmp/planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/planted.txt | cut -c1-220 | sed "s/^/planted: /" | tail -12; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' old='bin=/tmp/old/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -30; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 30 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -14; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 120 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_fast' --launch-count 1 --set full --import-source no -o $OUT/fast $m bench --layers C --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
$NCU -i $OUT/fast.ncu-rep --page details > $OUT/ncu-details.txt 2>&1
grep -E "Duration|Registers Per|Dynamic Shared|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Executed Ipc" $OUT/ncu-details.txt | head -12
$NCU -i $OUT/fast.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; xz -T4 $OUT/ncu-source.csv; rm -f $OUT/fast.ncu-rep; el
