# Run 217, on whichever card comes. First the probes (2aa8e38, Backend::set_probes in place of memra
# bench's setenv) on a GPU: memra_cuda_test backend on models/tiny (the timeline check's own-backend
# and off-again assertions, the PDL check's eager run with no graph: edges counted only on a GPU),
# then memra bench --timeline --graph-marks at 2 layers (decode 2k, batch 8, verify 6 / 16): every
# line's timeline and marks present, the decode hash as run 214's. On an H200 (the issue's card; the
# last H200 table is run 205's, before sessions 56-61's rules) then the v4 bench of the final code
# with transformers.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
timeout 150 "$t" backend models/tiny > "$OUT/backend-tiny.txt" 2>&1
echo "backend tiny rc=$? $(tail -1 "$OUT/backend-tiny.txt")"
grep -E "timeline|PDL" "$OUT/backend-tiny.txt" | cut -c1-260
timeout 120 "$m" bench --json --contexts 2048 --batches 8 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 \
  --timeline --graph-marks > /tmp/probes.json 2> "$OUT/probes.err"
echo "bench rc=$?"
xz -9 < /tmp/probes.json > "$OUT/probes.json.xz"
python3 - /tmp/probes.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for key, label in (("decode", "context"), ("verify", "block"), ("batch", "batch")):
    for e in d[key]:
        t = e.get("timeline", {}).get("sites", [])
        m = e.get("graph_marks", {}).get("marks", [])
        print(f"{key} {e[label]}: {len(t)} timeline sites, {len(m)} graph marks, "
              f"{e.get('ms_per_layer_token', e.get('ms', e.get('tokens_per_s')))}, hash {e.get('logits_xxh3', '-')[:12]}")
p = d["prefill"]
print(f"prefill: {len(p.get('timeline', {}).get('sites', []))} timeline sites, linear_TFLOPs {p.get('linear_TFLOPs')}")
PY
python3 bench/graph_marks.py /tmp/probes.json --lines decode,verify,batch --top 40 > "$OUT/marks.txt" 2>&1
grep -E "^(decode|verify|batch)" "$OUT/marks.txt" | head -6
if [[ $gpu == *H200* ]]; then v4_bench 40; fi
el
