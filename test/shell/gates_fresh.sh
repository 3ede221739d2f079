#!/usr/bin/env bash
# shell.gates_fresh: every gate passes on a random transformers checkpoint the suite has not seen
# (fresh seed, printed), and the parity gate is REFUSED (exit 1, naming the field) on a dump whose
# manifest claims another geometry.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
venv="${MEMRA_VENV:-$HOME/.cache/memra/venv}"
[[ -x "$venv/bin/python" ]] || { echo "FAIL: no oracle venv at $venv; run $src/tools/oracle/setup-venv.sh"; exit 1; }
seed="${MEMRA_GATE_SEED:-$(( $(date +%s%N) / 1000 % 1000000007 ))}"
w="$(mktemp -d "${MEMRA_BUILD:-/tmp}/gates_fresh.XXXXXX")"
echo "seed $seed (replay: MEMRA_GATE_SEED=$seed)"
MEMRA_PYTHON="$venv/bin/python" "$src/tools/oracle/fresh_case.sh" "$seed" "$w" 160 > /dev/null || { echo "FAIL: oracle"; exit 1; }
fail=0
out=$("$bin" -q gate all "$w/model" --dump "$w/dump" --seed "$seed" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 0 ]] && grep -q "^\[gate-all\] PASS gates=4 passed=4" <<<"$out" || { echo "FAIL: gate all rc=$rc"; fail=1; }
python3 -c "import json; p='$w/dump/manifest.json'; m=json.load(open(p)); m['geometry']['index_topk'] += 3; json.dump(m, open(p,'w'))"
out=$("$bin" -q gate parity "$w/model" "$w/dump" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 1 ]] && grep -q "^\[parity\] REFUSED .*index_topk" <<<"$out" || { echo "FAIL: parity gate on a wrong-geometry dump rc=$rc"; fail=1; }
[[ $fail -eq 0 ]] && rm -rf "$w" && echo "1 passed, 0 failed"
exit $fail
