# Run 157: cuda-fast's tensor-core attention writes wo_a's bf16 / f16 input itself (AttentionArgs::o16,
# LinearArgs::x16) instead of f32 outputs that convert_rows rounds. ops attention on the new library
# and on a planted one (f16 outputs' RoPE dims rotated forward; the bf16 x16 GEMM's group stride 0),
# an A/B of the prefill against MEMRA_CUDA_ATTN_HALF_OUT=0 in the same binary, the decode hash
# (the exact realization: unchanged), a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm planted
{ $m --version | head -1
  timeout 150 $t ops --only attention --seed 157 > /tmp/ops.txt 2>&1; echo "ops attention rc=$?" >> /tmp/ops.txt
  grep -E "^FAIL|checks|rc=|outputs" /tmp/ops.txt | cut -c1-200 | sed "s/^/new: /"
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 150 $t ops --only attention --seed 157 > /tmp/ops-planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/ops-planted.txt | cut -c1-200 | sed "s/^/planted: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops attention rc=0" /tmp/ops.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' f32out='MEMRA_CUDA_ATTN_HALF_OUT=0')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -8
python3 - /tmp/ab <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*1.json")):
    b = json.load(open(f))
    print(f.split("/")[-1], "decode", [(d["context"], d.get("ms_per_layer_token"), d.get("logits_xxh3")) for d in b["decode"]])
PY
el
mkdir -p /tmp/x; timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > /tmp/x/timeline.json 2> /dev/null
python3 bench/timeline.py /tmp/x/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | grep -E "prefill|attention|wo_a" | head -8; el
cp -r /tmp/ab /tmp/x/; tar -cJf $OUT/extra.tar.xz -C /tmp/x .; el
