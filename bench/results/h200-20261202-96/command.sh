# Run 96: run 95 again with the graphs instantiated to use node priorities (run 95: no effect without). Tests: ops, backend tiny / tiny-bf16
# (bits unchanged by construction; hashes in the bench). Bench A/B in one binary, three passes:
# def, ip0 (MEMRA_CUDA_INDEXER_PRIORITY=0), 2k and 32k; then one --graph-marks run per arm.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 170 $t ops --seed 96 2>&1 | grep -E "FAIL|checks" | cut -c1-200
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" def='' ip0='MEMRA_CUDA_INDEXER_PRIORITY=0' > $OUT/ab.txt 2>&1
for arm in def ip0; do
  e=MEMRA_AB=$arm; [[ $arm == ip0 ]] && e=MEMRA_CUDA_INDEXER_PRIORITY=0
  env $e timeout 120 $m $BA --graph-marks > $OUT/marks-$arm.json 2>/dev/null
  python3 bench/graph_marks.py $OUT/marks-$arm.json --top 8 > $OUT/marks-$arm.txt 2>&1
done
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; grep -A3 -E "^decode|^verify" $OUT/marks-def.txt | head -40; grep -E "indexer:" $OUT/marks-*.txt | cut -c1-250; el
