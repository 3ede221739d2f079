# Run 99: the indexer priority bounded to ≤ 2048 visible compressed entries (2k on, 32k off). Tests:
# ops, backend tiny / tiny-bf16. Bench A/B in one binary, three passes: def, ip0
# (MEMRA_CUDA_INDEXER_PRIORITY=0), 2k and 32k.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 170 $t ops --seed 99 2>&1 | grep -E "FAIL|checks" | cut -c1-200
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" def='' ip0='MEMRA_CUDA_INDEXER_PRIORITY=0' > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
