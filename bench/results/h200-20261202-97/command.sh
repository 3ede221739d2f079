# Run 97: the indexer priority's reach, A/B in one binary, three passes: p1 (default: weights_proj,
# wq_b and rope), p2 (MEMRA_CUDA_INDEXER_PRIORITY=2: the whole chain), p0 (=0: none); then one
# --graph-marks run per arm.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" p1='' p2='MEMRA_CUDA_INDEXER_PRIORITY=2' p0='MEMRA_CUDA_INDEXER_PRIORITY=0' > $OUT/ab.txt 2>&1
for arm in p1 p2 p0; do
  case $arm in p1) e=MEMRA_AB=p1;; p2) e=MEMRA_CUDA_INDEXER_PRIORITY=2;; p0) e=MEMRA_CUDA_INDEXER_PRIORITY=0;; esac
  env $e timeout 120 $m $BA --graph-marks > $OUT/marks-$arm.json 2>/dev/null
  python3 bench/graph_marks.py $OUT/marks-$arm.json --top 8 > $OUT/marks-$arm.txt 2>&1
done
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; grep -E "^decode|^verify|^batch|indexer:" $OUT/marks-*.txt | cut -c1-230; el
