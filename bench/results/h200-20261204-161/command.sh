# Run 161: cuda-fast's indexer scores on TF32 tensor cores for rounds of 64+ rows (indexer_fast.cu);
# the batched experts' slots gathered from the site's bf16 rows (gather_rows16) instead of converted
# again from f32; attention_fast's output RoPE one cosf / sinf a thread and its 16-bit stores through
# one runtime-typed helper. ops attention / moe / linear (with e7abe31's test mend, first run on a GPU);
# the same ops against a library with two planted bugs (a wrong head weight in the fast indexer, the
# 16-bit gather's last vector skipped): their lines must FAIL; the chunk-semantics gate (cuda-fast vs
# cuda) at 66 and 160 tokens on tiny-bf16, tiny-fp8 and a fresh oracle checkpoint, with its parity;
# an A/B of the prefill (5 passes) against MEMRA_CUDA_INDEXER_FAST=0 and MEMRA_CUDA_EXPERT_ROWS16=0;
# a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in attention moe linear; do timeout 150 $t ops --only $g --seed 161 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=|indexer scores cuda-fast|16-bit gather" /tmp/ops-$g.txt | cut -c1-220 | sed "s/^/$g: /"; done; el
  lib_arm planted && for g in attention moe; do LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only $g --seed 161 > /tmp/pl-$g.txt 2>&1
    echo "planted $g rc=$?"; grep -E "indexer scores cuda-fast|16-bit gather" /tmp/pl-$g.txt | cut -c1-220 | sed "s/^/planted $g: /"; done; el
  for model in tiny-bf16 tiny-fp8; do for p in 66 160; do
    timeout 60 $m -q gate semantics models/$model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics $model $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done; done; el
  fdir=/tmp/memra-fresh-161
  if timeout 90 env MEMRA_PYTHON="$(command -v python3)" tools/oracle/fresh_case.sh 161 $fdir > /tmp/fresh.txt 2>&1; then
    for b in cuda cuda-fast; do timeout 60 $m parity $fdir/model $fdir/dump --backend $b > /tmp/par.txt 2>&1; echo "parity fresh 161 $b rc=$? $(grep -E 'PASS|FAIL|INCONCLUSIVE' /tmp/par.txt | tail -1 | cut -c1-190)"; done
    for p in 66 160; do timeout 60 $m -q gate semantics $fdir/model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics fresh 161 $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done
  else echo "fresh case failed: $(tail -2 /tmp/fresh.txt)"; fi; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
cp /tmp/ops-*.txt /tmp/pl-*.txt $OUT/ 2>/dev/null
grep -q "ops attention rc=0" /tmp/ops-attention.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' idx_exact='MEMRA_CUDA_INDEXER_FAST=0' rows_f32='MEMRA_CUDA_EXPERT_ROWS16=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -14
grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^batch/p' | head -4; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 60 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | grep -E "prefill|indexer|gather|attention" | head -10; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
