#!/usr/bin/env bash
# shell.bench_marginal: bench/marginal.py takes two `memra bench --json` runs that differ only in
# their layers (CH, CHCH) and prints what one layer more costs, measured and floor alike:
# (LONG − SHORT) / extra layers for each decode context, batch, verify block and the prefill; runs
# that differ in more than their layers, a LONG without more layers, or a file that is not a bench
# document are a one-line error with exit 2. (The runs come from a GPU; this checks the arithmetic
# on made-up files.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
mg="$src/bench/marginal.py"
need python3
mk() {  # mk FILE LAYERS STEP_MS FLOOR_MS BATCH_STEP BATCH_FLOOR VERIFY_MS VERIFY_FLOOR PREFILL_S [SEED]
  cat > "$1" <<JSON
{"geometry": {"layers": "$2", "seed": ${10:-1}, "hidden": 4096, "vocab": 4096},
 "decode": [{"context": 2048, "step_ms": $3, "floor_ms": $4, "ms_per_layer_token": 0.24, "ratio_to_floor": 1.67}],
 "batch": [{"batch": 8, "context": 2048, "step_ms": $5, "floor_ms": $6, "ratio_to_floor": 1.42}],
 "verify": [{"block": 6, "context": 2048, "ms": $7, "floor_ms": $8, "ratio_to_floor": 1.41}],
 "prefill": {"tokens": 2048, "seconds": $9}}
JSON
}
mk "$work/ch.json" CH 0.48 0.286 1.70 1.19 1.35 0.96 0.0130
mk "$work/chch.json" CHCH 0.90 0.566 3.30 2.37 2.60 1.90 0.0250
# decode: (0.90 − 0.48) / 2 = 0.21 ms a layer against (0.566 − 0.286) / 2 = 0.14: 1.50x
expect 0 'decode batch 1 @ 2048  *0.2100  *0.1400  *1.50x  *1.67x' -- python3 "$mg" "$work/ch.json" "$work/chch.json"
expect 0 'decode batch 8 @ 2048  *0.8000  *0.5900  *1.36x  *1.42x' -- python3 "$mg" "$work/ch.json" "$work/chch.json"
expect 0 'verify 6-token block @ 2048  *0.6250  *0.4700  *1.33x  *1.41x' -- python3 "$mg" "$work/ch.json" "$work/chch.json"
expect 0 'prefill 2048 tokens (cuda-fast)  *6.0000 .* 6.5000 ms' -- python3 "$mg" "$work/ch.json" "$work/chch.json"
expect 0 '"extra_layers": 2' -- python3 "$mg" --json "$work/ch.json" "$work/chch.json"
mk "$work/other-seed.json" CHCH 0.90 0.566 3.30 2.37 2.60 1.90 0.0250 7
expect 2 'marginal.py: error: the two runs differ in more than their layers' -- python3 "$mg" "$work/ch.json" "$work/other-seed.json"
expect 2 'marginal.py: error: LONG must have more layers than SHORT (CH vs CHCH)' -- python3 "$mg" "$work/chch.json" "$work/ch.json"
echo '{"decode": []}' > "$work/nogeom.json"
expect 2 'marginal.py: error: .*nogeom.json: not a `memra bench --json` document' -- python3 "$mg" "$work/nogeom.json" "$work/chch.json"
expect 2 'marginal.py: error: .*missing.json: ' -- python3 "$mg" "$work/missing.json" "$work/chch.json"
exit $fail
