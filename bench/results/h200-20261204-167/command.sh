# Run 167: cuda-fast's batched experts writing bf16 from their GEMMs: gate / up for SwiGLU
# (swiglu16_convert) and the down GEMM's outputs for the combine (hc_post_moe16). ops moe and mhc,
# and against a library with two planted bugs (swiglu16's scalar path with gate and up swapped, the
# bf16 outputs' lanes swapped: their lines must FAIL); the chunk-semantics gates (tiny-bf16 at 160
# tokens takes the batched experts); an A/B of the prefill (5 passes); a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in moe mhc; do timeout 150 $t ops --only $g --seed 167 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=|swiglu16|hc_post_moe16" /tmp/ops-$g.txt | grep -v "n=3\|D=77" | cut -c1-200 | sed "s/^/$g: /"; done
  lib_arm planted && for g in moe mhc; do LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only $g --seed 167 > /tmp/pl-$g.txt 2>&1
    echo "planted $g rc=$?"; grep -E "^FAIL|checks" /tmp/pl-$g.txt | cut -c1-200 | sed "s/^/planted $g: /"; done; el
  for model in tiny-bf16 tiny-fp8; do for p in 66 160; do
    timeout 60 $m -q gate semantics models/$model --backend cuda --prompt-len $p > /tmp/sem.txt 2>&1; echo "semantics $model $p rc=$? $(tail -1 /tmp/sem.txt | cut -c1-150)"; done; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
cp /tmp/ops-*.txt /tmp/pl-*.txt $OUT/ 2>/dev/null
grep -q "ops moe rc=0" /tmp/ops-moe.txt && grep -q "ops mhc rc=0" /tmp/ops-mhc.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' gu_f32='MEMRA_CUDA_EXPERT_HALF_GU=0' eo_f32='MEMRA_CUDA_EXPERT_HALF_EO=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -16; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 60 > /tmp/x/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' /tmp/x/timeline.txt | grep -E "prefill|batched|combine" | head -12; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
