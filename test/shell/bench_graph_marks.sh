#!/usr/bin/env bash
# shell.bench_graph_marks: bench/graph_marks.py turns `memra bench --json --graph-marks` into tables:
# per step the main chain's in-graph cost by site (summed over the site's marks, largest first,
# --top rows) and each side stream's sites with their end times; a file without marks or an
# unreadable file is a one-line error with exit 2. (The marks themselves come from a GPU run; this
# checks the reader on a made-up file.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
gm="$src/bench/graph_marks.py"
cat > "$work/bench.json" <<'JSON'
{"decode": [{"context": 2048, "step_ms": 0.5, "graph_marks": {"step_ms_marked": 0.52, "marks": [
   {"stream": "main", "site": "embed_rows", "end_us": 0.0, "main_chain_us": 0.0},
   {"stream": "main", "site": "C:hc_pre (attention)", "end_us": 14.0, "main_chain_us": 14.0},
   {"stream": "kv", "site": "C:linear_exact (wkv)", "end_us": 23.5},
   {"stream": "main", "site": "C:attention", "end_us": 60.0, "main_chain_us": 46.0},
   {"stream": "main", "site": "C:hc_pre (attention)", "end_us": 70.0, "main_chain_us": 10.0}]}}],
 "verify": [{"block": 6, "ms": 1.4}], "batch": []}
JSON
expect 0 'decode 2048: step 0.500 ms, marked 0.520 ms, 5 marks, last at 70.0 us' -- python3 "$gm" "$work/bench.json"
expect 0 'main chain: 4 sites, 70.0 us' -- python3 "$gm" "$work/bench.json"
expect 0 '    46.0 us  C:attention' -- python3 "$gm" "$work/bench.json"
expect 0 '    24.0 us  C:hc_pre (attention)' -- python3 "$gm" "$work/bench.json"   # two marks, summed
expect 0 'kv: C:linear_exact (wkv) @23.5' -- python3 "$gm" "$work/bench.json"
# largest first, and --top keeps that many
out=$(python3 "$gm" "$work/bench.json" --top 1)
rows=$(grep -c ' us  ' <<< "$out")
[[ $rows -eq 1 ]] && grep -q 'C:attention' <<< "$out" || { echo "FAIL: --top 1 gave [$out]"; fail=1; }
expect 2 'graph_marks.py: error: .* has no graph marks' -- python3 "$gm" "$work/bench.json" --lines verify
expect 2 'graph_marks.py: error: cannot read' -- python3 "$gm" "$work/missing.json"
echo "not json" > "$work/bad.json"
expect 2 'graph_marks.py: error: cannot read' -- python3 "$gm" "$work/bad.json"
exit $fail
