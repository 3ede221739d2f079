#!/usr/bin/env bash
# shell.bench_ab_summary: bench/ab_summary.py lays `memra bench --json` runs of A/B arms side by side:
# per measure one line per arm (decode hash, batch tokens/s and alone-bits, verify ms and the round's costs), with --sites
# the matching timeline sites summed; an unreadable arm is named on stderr while the others print;
# no readable arm, a malformed ARM=FILE or a bad regex is a one-line error with exit 2. (The runs
# themselves come from a GPU; this checks the reader on made-up files.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
ab="$src/bench/ab_summary.py"
need python3
mk() {  # mk FILE TOKENS_PER_S LINEAR_MS
  cat > "$1" <<JSON
{"decode": [{"context": 2048, "ms_per_layer_token": 0.25, "ratio_to_floor": 1.75, "logits_xxh3": "383647b2373afe14",
  "timeline": {"sites": [{"site": "C:linear_exact (wq_b)", "ms": 0.02}, {"site": "C:attention", "ms": 0.03}]}}],
 "batch": [{"batch": 32, "tokens_per_s": $2, "ratio_to_floor": 1.5, "last_sequence_bits_equal_alone": true,
  "timeline": {"sites": [{"site": "C:linear_exact (wq_b)", "ms": $3}, {"site": "H:linear_exact (wo_b)", "ms": 0.1},
                         {"site": "C:experts_fused", "ms": 1.7}]}}],
 "verify": [{"block": 6, "ms": 1.5, "ratio_to_floor": 1.6}],
 "prefill": {"tokens_per_s": 90000, "exact_tokens_per_s": 8000}}
JSON
}
mk "$work/off.json" 5970 0.155
mk "$work/new.json" 6290 0.116
expect 0 '  off            5970 tok/s 1.500x alone-bits True sites    255.0 us' -- python3 "$ab" --sites linear_exact off="$work/off.json" new="$work/new.json"
expect 0 '  new            6290 tok/s 1.500x alone-bits True sites    216.0 us' -- python3 "$ab" --sites linear_exact off="$work/off.json" new="$work/new.json"
# a verify with the round's own costs (mark, journaled verify, the rewind keeping rows)
echo '{"verify": [{"block": 6, "ms": 1.5, "ratio_to_floor": 1.3, "round": {"mark_ms": 0.0123, "journaled_ms": 1.51, "kept_rows": 3, "keep_ms": 0.0456}}]}' > "$work/round.json"
expect 0 '1.500 ms 1.300x mark 12.3 us journaled 1.510 ms keep 3 45.6 us' -- python3 "$ab" r="$work/round.json"
expect 0 'hash 383647b2373a' -- python3 "$ab" off="$work/off.json"
expect 0 '90000 tok/s (cuda-fast), exact 8000 tok/s' -- python3 "$ab" off="$work/off.json"
# the prefill's logits hash, and a flag when its repetitions disagreed
echo '{"prefill": {"tokens_per_s": 91000, "last_logits_xxh3": "5a5a5a5a5a5a5a5a", "reps_same_bits": true}}' > "$work/ph.json"
echo '{"prefill": {"tokens_per_s": 92000, "last_logits_xxh3": "6b6b6b6b6b6b6b6b", "reps_same_bits": false}}' > "$work/pd.json"
expect 0 '91000 tok/s (cuda-fast) hash 5a5a5a5a5a5a$' -- python3 "$ab" ph="$work/ph.json"
expect 0 '92000 tok/s (cuda-fast) hash 6b6b6b6b6b6b REPS DIFFER' -- python3 "$ab" pd="$work/pd.json"
# an arm killed on the device: named on stderr, the others still print
expect 0 'ab_summary.py: gone: unreadable' -- python3 "$ab" off="$work/off.json" gone="$work/missing.json"
out=$(python3 "$ab" off="$work/off.json" gone="$work/missing.json" 2>/dev/null)
grep -q '  off            5970 tok/s' <<< "$out" || { echo "FAIL: the readable arm did not print"; fail=1; }
echo '{"batch": [{"batch": 8}]}' > "$work/partial.json"
expect 2 'ab_summary.py: error: no arm could be read' -- python3 "$ab" part="$work/partial.json"
expect 2 'ab_summary.py: error: no arm could be read' -- python3 "$ab" gone="$work/missing.json"
expect 2 "ab_summary.py: error: 'off' is not ARM=FILE" -- python3 "$ab" off
expect 2 'ab_summary.py: error: --sites: ' -- python3 "$ab" --sites '(' off="$work/off.json"
exit $fail
