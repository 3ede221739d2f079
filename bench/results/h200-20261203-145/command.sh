# Run 145: the batched experts' row moves fused (kernels/embed_head.cu, kernels/shard.cpp): the
# slots' rows gathered and converted to bf16 in one pass (convert_rows with rows_idx), SwiGLU
# straight into the down GEMM's bf16 input (swiglu_convert), the pairs' rows from their slots to
# their pairs in one move (move_rows). ops moe on this tree and under a planted library
# (swiglu_convert's vector path with two outputs swapped), an A/B of the prefill against c4b55ca's
# library (base: same bits expected, so the decode hashes after the prefill must match), a timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm base; lib_arm planted
{ $m --version | head -1
  timeout 90 $t ops --only moe --seed 145 > /tmp/ops.txt 2>&1; echo "ops rc=$?" > /tmp/ops.rc
  grep -E "^FAIL|checks|row moves|swiglu_convert" /tmp/ops.txt | cut -c1-200 | sed "s/^/moe: /"; cat /tmp/ops.rc; el
  LD_LIBRARY_PATH=/tmp/planted/bin timeout 90 $t ops --only moe --seed 145 > /tmp/planted.txt 2>&1; echo "planted rc=$?"
  grep -E "^FAIL|checks" /tmp/planted.txt | cut -c1-200 | sed "s/^/planted: /" | tail -8; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops rc=0" /tmp/ops.rc || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' base='bin=/tmp/base/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | grep -v "^  .*tok/s 1\.\|^batch\|^verify\|ms 1\.3" | head -24; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 8 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | grep -E "prefill|experts|site" | head -14; el
