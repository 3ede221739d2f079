#!/usr/bin/env bash
# shell.bench_tau: bench/tau.py measures the trained tiny pair's speculative rounds at each verify
# block a bench timed: a verify of v rows checks the anchor and v − 1 drafts, so the drafter runs at
# block v − 1 (tau at most v), every run lossless, and its rows add up (the verifies' rows, and the
# rollbacks by the accepted rows they keep, which --rollback rerun runs again). compare.py charges
# its two speculative lines by these counts.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
need python3
cd "$src" || exit 2
echo '{"verify": [{"block": 4, "context": 2048, "ms": 1.0}, {"block": 1, "context": 2048, "ms": 0.5}]}' > "$work/bench.json"
expect 0 '{"4": ' -- python3 bench/tau.py "$bin" "$work/bench.json" "$work/tau.json" --prompts 2 --steps 24
python3 - "$work/tau.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
b = d["blocks"]
assert set(b) == {"4"}, f"blocks {sorted(b)}: want only 4 (a verify of 1 row checks no draft)"
v = b["4"]
ok = True
def check(cond, what):
    global ok
    print(("ok: " if cond else "FAIL: ") + what)
    ok &= bool(cond)
check(v["drafter_block"] == 3 and v["runs"] == 2, f"drafter block {v['drafter_block']} (want 3), runs {v['runs']} (want 2)")
check(v["tokens"] == 48, f"tokens {v['tokens']} (want 2 × 24)")
check(1 <= v["tau"] <= 4 and abs(v["tau"] - v["tokens"] / v["rounds"]) < 1e-12, f"tau {v['tau']:.3f} = tokens / rounds, in [1, 4]")
h = v["rerun_rows_histogram"]
check(len(h) == 4 and h[0] == 0, f"re-runs by rows {h}: 4 bins, none of 0 rows")
check(v["rounds"] < v["verify_rows"] <= 4 * v["rounds"], f"verify rows {v['verify_rows']} within ({v['rounds']}, 4 × rounds]")
# what the loop emitted: per round the accepted drafts + the anchor; a rollback keeps (or re-runs) those rows
check(sum(k * n for k, n in enumerate(h)) <= v["tokens"], "re-run rows no more than the tokens")
sys.exit(0 if ok else 1)
PY
exit $fail
