# Run 154: the batched experts' slots one size for all experts where the estimate finds it cheaper
# (Shard::expert_slot_size: an expert with more pairs takes several slots) instead of a bucket per
# power of two (a 2048-token prefill's few experts past 64 or under 33 pairs made calls of their
# own). ops moe on the new library and on one whose later slots of an expert map their pairs
# reversed (planted); an A/B of the prefill against MEMRA_CUDA_EXPERT_SLOTS=0; a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm planted
{ timeout 200 $t ops --only moe --seed 154 > /tmp/ops.txt 2>&1; echo "ops moe rc=$?" >> /tmp/ops.txt
  grep -E "^FAIL|checks|rc=|batched" /tmp/ops.txt | cut -c1-200 | sed "s/^/new: /"
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 200 $t ops --only moe --seed 154 > /tmp/ops-planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/ops-planted.txt | cut -c1-200 | sed "s/^/planted: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops moe rc=0" /tmp/ops.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' buckets='MEMRA_CUDA_EXPERT_SLOTS=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -8; el
mkdir -p /tmp/x
for arm in new buckets; do
  [ $arm = buckets ] && export MEMRA_CUDA_EXPERT_SLOTS=0
  timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline-$arm.json 2> /dev/null
  python3 bench/timeline.py /tmp/x/timeline-$arm.json --top 40 > $OUT/timeline-$arm.txt 2>&1
  echo "== $arm"; grep -E "^### prefill|expert" $OUT/timeline-$arm.txt | head -8
done; unset MEMRA_CUDA_EXPERT_SLOTS; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .
