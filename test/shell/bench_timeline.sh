#!/usr/bin/env bash
# shell.bench_timeline: bench/timeline.py turns `memra bench --timeline --json` into tables: each
# timed forward's sites largest first with their share of the summed device time, the rest folded
# into one row under --top; a file without timelines or an unreadable file is a one-line error with
# exit 2. (The timelines themselves come from a GPU run; this checks the reader on a made-up file.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
tl="$src/bench/timeline.py"
cat > "$work/bench.json" <<'JSON'
{"memra": "0.1.0 (commit test)", "device": "test device", "geometry": {"layers": "CH"},
 "prefill": {"tokens": 2048},
 "decode": [{"context": 2048, "timeline": {"device_ms_sum": 2.0, "measured_ms": 1.5, "sites": [
   {"site": "C:experts_fused", "ms": 0.8, "launches": 1}, {"site": "C:attention", "ms": 0.6, "launches": 1},
   {"site": "H:norm_rope (attn_norm)", "ms": 0.4, "launches": 1}, {"site": "hc_head", "ms": 0.2, "launches": 1}]}}],
 "verify": [], "batch": []}
JSON
expect 0 '| C:experts_fused | 0.8000 | 40.0% | 1 |' -- python3 "$tl" "$work/bench.json"
expect 0 '### decode batch 1 @ 2048 (exact): 2.000 ms' -- python3 "$tl" "$work/bench.json"
expect 0 '| (2 more sites) | 0.6000 | 30.0% | 2 |' -- python3 "$tl" "$work/bench.json" --top 2
python3 - "$work/bench.json" "$work/none.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
del b["decode"][0]["timeline"]
json.dump(b, open(sys.argv[2], "w"))
PY
expect 2 'timeline.py: error: no timelines in this file' -- python3 "$tl" "$work/none.json"
expect 2 'timeline.py: error: ' -- python3 "$tl" "$work/missing.json"
echo "not json" > "$work/bad.json"
expect 2 'timeline.py: error: ' -- python3 "$tl" "$work/bad.json"
# the rows come out largest first
out=$(python3 "$tl" "$work/bench.json")
order=$(grep -o '| [CH]:[a-z_ (]*[a-z)] |' <<< "$out" | tr -d '|' | xargs)
[[ "$order" == "C:experts_fused C:attention H:norm_rope (attn_norm)" ]] || { echo "FAIL: site order [$order]"; fail=1; }
exit $fail
