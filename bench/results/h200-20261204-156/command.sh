# Run 156: the review mend (hc_post / hc_post_moe refuse a form past 2; the mix kernels' staging as
# one helper): ops mhc, compressor, attention, moe; one bench (its decode hashes after the prefill
# against run 155's).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  for g in mhc compressor attention moe; do timeout 150 $t ops --only $g --seed 156 > /tmp/ops-$g.txt 2>&1; echo "ops $g rc=$? $(grep -c '^ok' /tmp/ops-$g.txt) ok"; grep "^FAIL" /tmp/ops-$g.txt | cut -c1-200; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
timeout 90 $m bench --json --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5 > $OUT/bench.json 2> /dev/null
python3 - $OUT/bench.json <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
print("prefill", round(b["prefill"]["tokens_per_s"]), "tok/s")
for d in b["decode"]:
    print("decode", d["context"], d.get("ms_per_layer_token"), "hash", d.get("logits_xxh3"))
PY
el
