# Run 137: the cluster attention's logits five keys a warp and pass at d = 512, 4 heads (two passes
# over a block's 80 keys at 640 instead of three; kernels/attention_cluster.cu keys_per_pass). ops
# attention, then an A/B against 76d132a's library (old), three passes with graph marks.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm old
{ $m --version | head -1
  timeout 60 $t ops --only attention --seed 137 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks" /tmp/ops.txt | cut -c1-200 | tail -4 | sed "s/^/attention: /"; cat /tmp/ops.rc; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' old='bin=/tmp/old/bin')
BA="bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^prefill/p' | head -40
for a in new old; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,verify,batch --top 40 2>&1 | grep -E "^(decode|verify|batch)|attention" | grep -v "comb:" | sed "s/^/$a /" | head -16; done; el
