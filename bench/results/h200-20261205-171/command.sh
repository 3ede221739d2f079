# Run 171: main with the indexer's first loads before its RoPE turns' barrier (1289e22) and the
# attention's 16-head form gone (641f180). ops attention (the new staging; forms 1 / 2 by bits) and
# against a planted library (planted.patch: the second RoPE pair of each float4 turned by the first's
# angle: the four "rotated in its staging == rope_only first" lines must FAIL); an A/B of the prefill,
# new vs MEMRA_CUDA_INDEXER_ROPE=0 (rope_only apart; the same bits), five passes, then one timeline each
# (JSON back); the snapshot / restore bandwidth again (run 170's VM hashed slowly: is 70% the VM?).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  timeout 100 $t ops --only attention --seed 171 > /tmp/ops-attention.txt 2>&1; echo "ops attention rc=$?"
  grep -E "^FAIL|checks|rotated in its staging|refused where" /tmp/ops-attention.txt | cut -c1-200
  lib_arm planted && LD_LIBRARY_PATH=/tmp/planted/bin timeout 100 $t ops --only attention --seed 171 > /tmp/pl-attention.txt 2>&1
  echo "planted attention rc=$?"; grep -E "^FAIL|checks" /tmp/pl-attention.txt | cut -c1-200; el
  timeout 90 $t bandwidth v4-flash --gib 1.0 > /tmp/bandwidth.txt 2>&1; echo "bandwidth rc=$?"
  grep -E "snapshot|restore|hashes alone" /tmp/bandwidth.txt; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
cp /tmp/ops-attention.txt /tmp/bandwidth.txt $OUT/
grep -q "ops attention rc=0" $OUT/tests.txt || { echo "ops attention failed: no A/B"; exit 1; }
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 60 $m /tmp/ab "$BA" new='' rope_apart='MEMRA_CUDA_INDEXER_ROPE=0' > $OUT/ab.txt 2>&1
grep -A12 "^prefill" $OUT/ab.txt; el
mkdir -p /tmp/x; for arm in new rope_apart; do env $( [ $arm = rope_apart ] && echo MEMRA_CUDA_INDEXER_ROPE=0 ) timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline-$arm.json 2> /dev/null
  python3 bench/timeline.py /tmp/x/timeline-$arm.json --top 60 > /tmp/x/timeline-$arm.txt 2>&1
  echo "== $arm"; sed -n '/prefill/,/^$/p' /tmp/x/timeline-$arm.txt | grep -E "prefill|indexer|rope_only" | head -6; done; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
