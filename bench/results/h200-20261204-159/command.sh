# Run 159: the raw-q staging's four heads' loads at once and one cosf / sinf a dim pair for them
# (rope.cuh's rope_turn / rope_apply, rope_pair's bits) against run 158's form (`prev`, carried).
# ops attention, norm, linear and moe on the new library (this session's changes: attention_fast,
# norm_row, linear_fast's x16, the 16-bit stores moved to half_store.cuh); an A/B of the prefill (5
# passes, its logits hash); then issue 13's table (bench/gpu_bench.sh: memra bench --timeline beside
# transformers 5.17) with the arm whose median prefill was higher.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
lib_arm prev
{ $m --version | head -1
  for g in attention norm linear moe; do timeout 150 $t ops --only $g --seed 159 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$?" >> /tmp/ops-$g.txt
    grep -E "^FAIL|checks|rc=" /tmp/ops-$g.txt | cut -c1-200 | sed "s/^/$g: /"; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
grep -q "ops attention rc=0" /tmp/ops-attention.txt || { echo "ops failed: no A/B"; exit 1; }
ARMS=(new='' prev='bin=/tmp/prev/bin')
BA="bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5"
bash bench/ab_arms.sh --passes 5 --timeout 90 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | sed -n '/^prefill/,$p' | head -11
best=$(python3 - /tmp/ab <<'PY'
import glob, json, statistics, sys
med = {}
for arm in ("new", "prev"):
    v = [json.load(open(f))["prefill"]["tokens_per_s"] for f in glob.glob(f"{sys.argv[1]}/{arm}[0-9].json")]
    med[arm] = statistics.median(v) if v else 0
print(max(med, key=med.get))
PY
); echo "table with: $best"; el
[[ $best == prev ]] && BIN=/tmp/prev/bin || BIN=$P/bin
OUT=$OUT/bench BIN=$BIN BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline bash bench/gpu_bench.sh > /tmp/gb.txt 2>&1
tail -22 /tmp/gb.txt; el
xz -6 $OUT/bench/memra-bench.json
tar -cJf $OUT/ab.tar.xz -C /tmp ab; ls $OUT $OUT/bench; el
