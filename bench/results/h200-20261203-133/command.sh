# Run 133: the cluster attention's logits a warp per (key, four heads) with q in registers, the key
# rows copied by cp.async into four row buffers a warp; phase 3's ring asked for at the exchange
# (kernels/attention_cluster.cu). ops attention (bits against the all-rows kernels, and the cluster
# kernel with misaligned key rows), then an A/B against main's c707379 library, three passes with
# graph marks: the logits hashes must match the old arm's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
mkdir -p /tmp/old/bin && cp $P/bin/memra /tmp/old/bin/ && python3 -c "import lzma,sys; open('/tmp/old/bin/libmemra_cuda.so','wb').write(lzma.open('$P/old/libmemra_cuda.so.xz').read())"
for f in $P/bin/*.so.*; do ln -sf $f /tmp/old/bin/; done
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 133 2>&1 | grep -E "^FAIL|checks|off 16" | cut -c1-200 | tail -6 | sed "s/^/attention: /"
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(new='' old='bin=/tmp/old/bin')
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -40
for a in new old; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,verify,batch --top 40 2>&1 | grep -E "^(decode|verify|batch)|attention" | grep -v "comb:" | sed "s/^/$a /" | head -24; done; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_cluster' --launch-count 2 --set full --import-source no -o $OUT/attn $m bench --layers CC --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
$NCU -i $OUT/attn.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; $NCU -i $OUT/attn.ncu-rep --page details > $OUT/ncu-details.txt
grep -E "Duration|Registers Per|Dynamic Shared" $OUT/ncu-details.txt; xz -T4 $OUT/ncu-source.csv; rm -f $OUT/attn.ncu-rep; el
