#!/usr/bin/env bash
# shell.bench_ab_medians: bench/ab_medians.py reads bench/ab_arms.sh's ARMpass.json files (arm names
# may end in digits: the pass is the last one), prints each arm's medians over its passes and, last,
# "winner ARM" among the candidates by batch-64 tokens/s; an unreadable file is named on stderr and
# skipped; --sites sums other timeline sites (ab_summary.py's site_sum); --per-site prints each
# matching site's median per arm and round with its change against the first arm; --phases prints
# each round's phases_us medians per arm (a run without them: '-'); no readable run, no OUTDIR
# or a bad regex is a one-line error with exit 2. (Made-up files: the runs come from a GPU.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
med="$src/bench/ab_medians.py"
need python3
mk() {  # mk FILE B64_TOKENS_PER_S LINEAR64_MS
  cat > "$1" <<JSON
{"decode": [{"context": 2048, "ms_per_layer_token": 0.25}],
 "batch": [{"batch": 64, "tokens_per_s": $2,
  "timeline": {"sites": [{"site": "C:linear_exact (wq_b)", "ms": $3}, {"site": "C:experts_fused", "ms": 3.3}]}}],
 "verify": [{"block": 6, "ms": 1.5}]}
JSON
}
d="$work/ab"; mkdir -p "$d"
mk "$d/k41.json" 6700 0.2; mk "$d/k42.json" 6720 0.19; mk "$d/k43.json" 6900 0.18   # k4: median 6720, 0.19
mk "$d/k4b1.json" 6760 0.17; mk "$d/k4b2.json" 6750 0.18                             # k4b: median 6755
mk "$d/base1.json" 9000 0.3                                                          # not a candidate
expect 0 '^k4  *0.2500  *-  *-  *6720  *1.500  *-  *-  *0.190$' -- python3 "$med" "$d" k4,k4b
expect 0 '^k4b  *0.2500  *-  *-  *6755 ' -- python3 "$med" "$d" k4,k4b
expect 0 '^winner k4b$' -- python3 "$med" "$d" k4,k4b
expect 0 '^winner base$' -- python3 "$med" "$d"
expect 0 '^winner -$' -- python3 "$med" "$d" k9,k10
expect 0 '^k4  *0.2500  *-  *-  *6720  *1.500  *-  *-  *3.300$' -- python3 "$med" --sites experts "$d" k4
expect 0 '^b64   *C:linear_exact (wq_b)  *300.0  *190.0  *-110.0  *175.0  *-125.0$' -- python3 "$med" --per-site 'wq_b' "$d"
ph="$work/ph"; mkdir -p "$ph"
mkp() {  # mkp FILE HOST_TOTAL: a decode and a verify-6 line with phases
  cat > "$1" <<JSON
{"decode": [{"context": 2048, "ms_per_layer_token": 0.25,
  "phases_us": {"host_total": $2, "device_total": 500, "host_outside_device": $(($2 - 500)), "host_plan": 5,
   "host_launch": 3, "host_after_launch": 540, "device_plan_copy": 2, "device_round": 495, "device_logits_copies": 3}}],
 "verify": [{"block": 6, "ms": 1.5, "phases_us": {"host_total": 1600, "device_total": 1580}}]}
JSON
}
mkp "$ph/p1.json" 540; mkp "$ph/p2.json" 560; mkp "$ph/p3.json" 580   # median 560
mk "$ph/q1.json" 6700 0.2                                              # no phases
expect 0 '^decode p  *560.0  *500.0  *60.0  *5.0  *3.0  *540.0  *2.0  *495.0  *3.0$' -- python3 "$med" --phases "$ph"
expect 0 '^v6  *p  *1600.0  *1580.0  *-  *-' -- python3 "$med" --phases "$ph"
expect 0 '^decode q  *-  *-  *-' -- python3 "$med" --phases "$ph"
expect 0 '^decode p  *560.0 ' -- python3 "$med" --per-site wq_b --phases "$ph"   # both tables from one read
expect 2 'ab_medians.py: error: --sites: ' -- python3 "$med" --sites '(' "$d"
expect 2 'ab_medians.py: error: --per-site: ' -- python3 "$med" --per-site '(' "$d"
echo '{"batch": [' > "$d/broken1.json"
expect 0 'ab_medians.py: broken1.json: unreadable' -- python3 "$med" "$d" k4
expect 2 'ab_medians.py: error: no run could be read' -- python3 "$med" "$work/none"
expect 2 'ab_medians.py: error: the following arguments are required: outdir (hint: ' -- python3 "$med"
expect 2 'ab_medians.py: error: unrecognized arguments: extra (hint: ' -- python3 "$med" "$d" k4 extra
exit $fail
