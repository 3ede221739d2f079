# Run 160: cuda-fast converts a site's input rows to bf16 once (Shard::site_rows16) for every linear
# that reads them (wq_a, wkv, the compressors' wkv / wgate, the indexer's weights_proj; the shared
# expert's w1 / w3, the router), each of which converted them again before. ops attention and linear;
# the chunk-semantics gate (cuda-fast vs cuda) at 66 and 160 tokens on models/tiny-bf16 and
# tiny-fp8 and on one fresh oracle checkpoint with its cuda / cuda-fast parity; an A/B of the
# prefill (5 passes) against MEMRA_CUDA_SITE_ROWS16=0 with the prefill's logits hash; a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in attention linear; do timeout 150 $t ops --only $g --seed 160 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=" /tmp/ops-$g.txt | cut -c1-200 | sed "s/^/$g: /"; done; el
  for model in tiny-bf16 tiny-fp8; do for p in 66 160; do
    timeout 60 $m -q gate semantics models/$model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics $model $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done; done; el
  fdir=/tmp/memra-fresh-160
  if timeout 90 env MEMRA_PYTHON="$(command -v python3)" tools/oracle/fresh_case.sh 160 $fdir > /tmp/fresh.txt 2>&1; then
    for b in cuda cuda-fast; do timeout 60 $m parity $fdir/model $fdir/dump --backend $b > /tmp/par.txt 2>&1; echo "parity fresh 160 $b rc=$? $(grep -E 'PASS|FAIL|INCONCLUSIVE' /tmp/par.txt | tail -1 | cut -c1-190)"; done
    for p in 66 160; do timeout 60 $m -q gate semantics $fdir/model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics fresh 160 $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done
  else echo "fresh case failed: $(tail -2 /tmp/fresh.txt)"; fi; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops attention rc=0" /tmp/ops-attention.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' convert='MEMRA_CUDA_SITE_ROWS16=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -11
grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^batch/p' | head -3; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 60 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | grep -E "prefill|wq_a|wkv|shared w1|router|site rows" | head -10; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
