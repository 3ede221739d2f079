# Run 162: the batched experts' outputs read from their slots by the ffn combine (hc_post_moe's
# eo_rows; move_rows gone; MEMRA_CUDA_EXPERT_SLOTS_READ=0 for A/B), hc_pre's mix as a cuBLAS TF32
# GEMM + hc_mix_finish for cuda-fast rounds of 64+ rows (HcPreArgs::mix_given; MEMRA_CUDA_HC_MIX_GEMM=0),
# attention_fast's output code back to run 160's (run 161's timeline read it slower), and two forms of
# the TF32 indexer carried as libraries (idxg4: four 16-dim key chunks' loads in flight; idxg8: eight,
# at one block an SM). ops mhc / moe / attention (idxg4 / idxg8 ops attention too); planted bugs
# (eo_rows ignored and hc_mix_finish not scaling: lib planted_rows; the given mix read as slices:
# planted_S) must FAIL their lines; chunk-semantics gates and a fresh oracle case; an A/B of the
# prefill (5 passes); a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in mhc moe attention; do timeout 150 $t ops --only $g --seed 162 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=|given mix|eo_rows|indexer scores cuda-fast" /tmp/ops-$g.txt | cut -c1-200 | sed "s/^/$g: /"; done; el
  for lib in planted_rows planted_S; do lib_arm $lib; LD_LIBRARY_PATH=/tmp/$lib/bin timeout 150 $t ops --only mhc --seed 162 > /tmp/pl-$lib.txt 2>&1
    echo "$lib mhc rc=$?"; grep -E "^FAIL|checks|given mix|eo_rows|illegal|error" /tmp/pl-$lib.txt | cut -c1-200 | sed "s/^/$lib: /"; done; el
  for lib in idxg4 idxg8; do lib_arm $lib; LD_LIBRARY_PATH=/tmp/$lib/bin timeout 150 $t ops --only attention --seed 162 > /tmp/ops-$lib.txt 2>&1
    echo "$lib ops attention rc=$?"; grep -E "^FAIL|checks|indexer scores cuda-fast" /tmp/ops-$lib.txt | cut -c1-200 | sed "s/^/$lib: /"; done; el
  for model in tiny-bf16 tiny-fp8; do for p in 66 160; do
    timeout 60 $m -q gate semantics models/$model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics $model $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done; done; el
  fdir=/tmp/memra-fresh-162
  if timeout 90 env MEMRA_PYTHON="$(command -v python3)" tools/oracle/fresh_case.sh 162 $fdir > /tmp/fresh.txt 2>&1; then
    for b in cuda cuda-fast; do timeout 60 $m parity $fdir/model $fdir/dump --backend $b > /tmp/par.txt 2>&1; echo "parity fresh 162 $b rc=$? $(grep -E 'PASS|FAIL|INCONCLUSIVE' /tmp/par.txt | tail -1 | cut -c1-190)"; done
    for p in 66 160; do timeout 60 $m -q gate semantics $fdir/model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics fresh 162 $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done
  else echo "fresh case failed: $(tail -2 /tmp/fresh.txt)"; fi; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
cp /tmp/ops-*.txt /tmp/pl-*.txt $OUT/ 2>/dev/null
grep -q "ops mhc rc=0" /tmp/ops-mhc.txt && grep -q "ops moe rc=0" /tmp/ops-moe.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' slots_move='MEMRA_CUDA_EXPERT_SLOTS_READ=0' mix_exact='MEMRA_CUDA_HC_MIX_GEMM=0' idxg4='bin=/tmp/idxg4/bin' idxg8='bin=/tmp/idxg8/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -30
grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^batch/p' | head -6; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
for lib in idxg4 idxg8; do timeout 60 /tmp/$lib/bin/memra bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline-$lib.json 2> /dev/null; done
python3 bench/timeline.py /tmp/x/timeline.json --top 60 > /tmp/x/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' /tmp/x/timeline.txt | grep -E "prefill|indexer|hc_|hc mix|attention|combine|move_rows" | head -20
for lib in idxg4 idxg8; do python3 bench/timeline.py /tmp/x/timeline-$lib.json --top 60 2>&1 | grep -E "indexer_scores \(tensor" | head -1 | sed "s/^/$lib /"; done; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
