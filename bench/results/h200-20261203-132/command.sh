# Run 132: the cluster attention's outputs phase two heads a thread, its key slices through a ring
# of 4 cp.async chunks asked for from the key table on, and the exchange by float4 without a
# division (kernels/attention_cluster.cu). ops attention (bits against the all-rows kernels), then
# an A/B against main's library (old: the same memra with c707379's libmemra_cuda), three passes
# with graph marks: the logits hashes must match the old arm's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
mkdir -p /tmp/old/bin && cp $P/bin/memra /tmp/old/bin/ && python3 -c "import lzma,sys; open('/tmp/old/bin/libmemra_cuda.so','wb').write(lzma.open('$P/old/libmemra_cuda.so.xz').read())"
for f in $P/bin/*.so.*; do ln -sf $f /tmp/old/bin/; done
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 132 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -4 | sed "s/^/attention: /"
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(new='' old='bin=/tmp/old/bin')
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -40
for a in new old; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,verify --top 40 2>&1 | grep -E "^(decode|verify)|attention" | sed "s/^/$a /" | head -12; done; el
