# Run 158: cuda-fast's tensor-core attention applies the query heads' norm_rope while it stages q
# (AttentionArgs::q_raw; norm_row.cuh's played_rms_inverse, shared with norm_rope_warp_kernel), the
# separate norm_rope pass over q gone. ops attention and norm on the new library; ops attention on a
# planted one (the staging's sum of squares in another order); an A/B of the prefill (5 passes:
# new, MEMRA_CUDA_ATTN_Q_NORM=0, and both of this session's changes off) with the prefill's logits
# hash (memra bench now reports it); a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm planted
{ $m --version | head -1
  for g in attention norm; do timeout 150 $t ops --only $g --seed 158 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=" /tmp/ops-$g.txt | cut -c1-200 | sed "s/^/new: /"; done
  grep -E "raw q" /tmp/ops-attention.txt | head -3 | cut -c1-200
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only attention --seed 158 > /tmp/ops-planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/ops-planted.txt | sort -u | cut -c1-200 | sed "s/^/planted: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops attention rc=0" /tmp/ops-attention.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' qnorm='MEMRA_CUDA_ATTN_Q_NORM=0' neither='MEMRA_CUDA_ATTN_Q_NORM=0 MEMRA_CUDA_ATTN_HALF_OUT=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -16
grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^batch/p' | head -4; el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | grep -E "prefill|attention|wo_a|norm_rope" | head -8; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
