# Run 135: the cluster attention on clusters of 16 blocks (8 heads a cluster at one or two rows),
# its ring copies by one test of the key rows' alignment, unrolled, and the ring's first chunks asked
# for after the exchange's second cluster barrier (kernels/attention_cluster.cu). ops attention (4 / 8
# heads on 8 / 16 blocks, misaligned rows), then an A/B: new; c8 (MEMRA_CUDA_ATTN_CLUSTER_BLOCKS=8:
# 4 heads on 8 blocks at one row, as before); v16 (=16: also 8 heads on 16 blocks at 3+ rows); mid
# (d3a36cf's library). Three passes with graph marks; ncu of the new kernel.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm old
{ $m --version | head -1
  timeout 60 $t ops --only attention --seed 135 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|off 16" /tmp/ops.txt | cut -c1-200 | tail -6 | sed "s/^/attention: /"; cat /tmp/ops.rc
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' c8='MEMRA_CUDA_ATTN_CLUSTER_BLOCKS=8' v16='MEMRA_CUDA_ATTN_CLUSTER_BLOCKS=16' mid='bin=/tmp/old/bin')
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -90
for a in new c8 v16 mid; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,verify,batch --top 40 2>&1 | grep -E "^(decode|verify|batch)|attention" | grep -v "comb:" | sed "s/^/$a /" | head -24; done; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_cluster' --launch-count 2 --set full --import-source no -o $OUT/attn $m bench --layers CC --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
$NCU -i $OUT/attn.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; $NCU -i $OUT/attn.ncu-rep --page details > $OUT/ncu-details.txt
grep -E "Duration|Registers Per|Dynamic Shared" $OUT/ncu-details.txt; xz -T4 $OUT/ncu-source.csv; rm -f $OUT/attn.ncu-rep; el
# The planted library (phase 3: head 2g + 1's chain takes keys jj + 1, jj out of order): ops attention must FAIL.
lib_arm planted
LD_LIBRARY_PATH=/tmp/planted/bin timeout 90 $t ops --only attention --seed 135 > $OUT/planted.txt 2>&1; echo "planted rc=$?" >> $OUT/planted.txt
grep -cE "^FAIL" $OUT/planted.txt | sed 's/^/planted FAIL lines: /'; tail -2 $OUT/planted.txt; el
