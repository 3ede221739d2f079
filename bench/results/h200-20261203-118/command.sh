# Run 118: hc_pre's many-row mix, kMixRows (16) rows a block with the slice's fn loaded once and the
# rows' stream values staged in shared memory (hc_mix_rows_kernel; MEMRA_CUDA_HC_MIX_ROWS=0 for the
# one-row-a-block form). Run 117's prefill timeline: hc_pre 0.815 ms each, four a prefill. And the
# indexer's scores for rounds of 128+ rows with 4 chunks of entries a block, the 32 KB query staged
# once for them (MEMRA_CUDA_INDEXER_CHUNKS=0: one chunk a block; scores 0.985 ms a prefill).
# The whole ops suite on this tree, ops mhc and indexer under a planted library (the mix rows
# kernel's lane chain in reverse: 70 rows must then differ from 3 alone; a chunk skipped: unwritten
# scores), A/B three passes, then the full timeline of one prefill under each arm.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 200 $t ops --seed 118 > /tmp/ops.txt 2>&1; echo "ops rc=$?"; grep -E "^FAIL|checks" /tmp/ops.txt | cut -c1-200 | tail -14
  grep -E "hc_pre" /tmp/ops.txt | cut -c1-200 | head -30
  for g in mhc attention; do LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only $g --seed 118 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -30 | sed "s/^/planted $g: /"; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt | tail -40; cp /tmp/ops.txt $OUT/ops.txt
ARMS=(def='' mix0='MEMRA_CUDA_HC_MIX_ROWS=0' ch0='MEMRA_CUDA_INDEXER_CHUNKS=0' both0='MEMRA_CUDA_HC_MIX_ROWS=0 MEMRA_CUDA_INDEXER_CHUNKS=0')
BA="bench --json --contexts 2048 --batches 8,64 --verify 6 --snapshot-gib 0.05 --prefill 2048 --reps 3"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -60; el
for a in "${ARMS[@]}"; do
  env ${a#*=} timeout 60 $m bench --timeline --json --contexts 2048 --batches 64 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline-${a%%=*}.json 2> /dev/null
  python3 bench/timeline.py $OUT/timeline-${a%%=*}.json --top 40 > $OUT/timeline-${a%%=*}.txt 2>&1
done
sed -n '/prefill/,/^$/p' $OUT/timeline-def.txt | head -50; el
