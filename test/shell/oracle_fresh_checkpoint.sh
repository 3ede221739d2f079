#!/usr/bin/env bash
# shell.oracle_fresh_checkpoint: a fresh random checkpoint (new seed every run) loads in memra, and
# `memra load --json` resolves the same geometry as transformers (the oracle dump's manifest).
#
# Needs the oracle venv (tools/oracle/setup-venv.sh); without it the test FAILS, it does not skip.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC, MEMRA_BUILD. Optional: MEMRA_VENV, MEMRA_ORACLE_SEED.
set -uo pipefail

src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
source "$src/test/shell/lib/oracle_draw.sh"

drawn=$([[ -n "${MEMRA_ORACLE_SEED:-}" ]] && echo 0 || echo 1)
seed="${MEMRA_ORACLE_SEED:-$(( $(date +%s) % 1000000007 ))}"
work="$(mktemp -d "${MEMRA_BUILD:-${TMPDIR:-/tmp}}/oracle_fresh.XXXXXX")"
echo "seed $seed (rerun with MEMRA_ORACLE_SEED=$seed), work dir $work"

make_case() { rm -rf "$work/model" "$work/dump"; MEMRA_PYTHON="$py" "$src/tools/oracle/fresh_case.sh" "$seed" "$work" 120; }
if ! draw_oracle_case "$drawn" make_case; then
  echo "FAIL: tools/oracle/fresh_case.sh $seed $work 120 failed (files kept in $work)"
  exit 1
fi

if ! "$bin" load "$work/model" --json > "$work/load.json" 2> "$work/load.err"; then
  echo "FAIL: $bin load $work/model --json failed (files kept in $work):"
  cat "$work/load.err"
  exit 1
fi

if ! "$py" - "$work/dump/manifest.json" "$work/load.json" <<'PYEOF'
import json, math, sys

want = json.load(open(sys.argv[1]))["geometry"]
try:
    got = json.load(open(sys.argv[2]))["geometry"]
except (ValueError, KeyError) as e:
    print(f"FAIL: memra load --json output has no .geometry object ({e})")
    sys.exit(1)

def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=0.0)  # float32 storage on the C++ side is fine
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b

bad = 0
for key in want:
    if key not in got:
        print(f"geometry.{key}: missing in memra load --json (oracle: {json.dumps(want[key])})")
        bad += 1
    elif not same(want[key], got[key]):
        print(f"geometry.{key}: memra {json.dumps(got[key])} != oracle {json.dumps(want[key])}")
        bad += 1
for key in got:
    if key not in want:
        print(f"geometry.{key}: extra key in memra load --json ({json.dumps(got[key])})")
        bad += 1
if bad:
    print(f"FAIL: {bad} geometry keys differ")
    sys.exit(1)
print(f"ok: {len(want)} geometry keys match")
PYEOF
then
  echo "FAIL: geometry mismatch for seed $seed (files kept in $work)"
  exit 1
fi
rm -rf "$work"
echo "PASS"
