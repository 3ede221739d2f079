#!/usr/bin/env bash
# shell.gates_fresh: every gate passes on a random transformers checkpoint the suite has not seen
# (fresh seed, printed) — the in-process gates and the artifact gates (equal, band, hash) — and the parity gate is REFUSED (exit 1, naming the field) on a dump whose
# manifest claims another geometry.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
source "$src/test/shell/lib/oracle_draw.sh"
drawn=$([[ -n "${MEMRA_GATE_SEED:-}" ]] && echo 0 || echo 1)
seed="${MEMRA_GATE_SEED:-$(( $(date +%s%N) / 1000 % 1000000007 ))}"
w="$(mktemp -d "${MEMRA_BUILD:-/tmp}/gates_fresh.XXXXXX")"
echo "seed $seed (replay: MEMRA_GATE_SEED=$seed)"
make_case() { rm -rf "$w/model" "$w/dump"; MEMRA_PYTHON="$venv/bin/python" "$src/tools/oracle/fresh_case.sh" "$seed" "$w" 160 > /dev/null; }
draw_oracle_case "$drawn" make_case || { echo "FAIL: oracle (seed $seed)"; exit 1; }
fail=0
out=$("$bin" -q gate all "$w/model" --dump "$w/dump" --seed "$seed" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 0 ]] && grep -q "^\[gate-all\] PASS gates=4 passed=4" <<<"$out" || { echo "FAIL: gate all rc=$rc"; fail=1; }
# The artifact gates on the same unseen model: two chunk widths give equal states and logits,
# the band gate passes them, and a kept manifest checks.
python3 -c "import json; v=json.load(open('$w/model/config.json'))['vocab_size']; print(' '.join(str(2 + (i * 37) % (v - 2)) for i in range(90)))" > "$w/t.txt"
for c in 1 64; do "$bin" -q prefill "$w/model" --tokens "$w/t.txt" --chunk $c -o "$w/c$c.mst" --logits "$w/l$c.npy" > /dev/null || fail=1; done
"$bin" -q snapshot "$w/c1.mst" --write-manifest "$w/c1.hashes" > /dev/null || fail=1
for g in "equal $w/c1.mst $w/c64.mst" "equal $w/l1.npy $w/l64.npy" "band $w/l1.npy $w/l64.npy --model $w/model" "hash $w/c64.mst --expect $w/c1.hashes"; do
  out=$("$bin" gate $g 2>&1); rc=$?
  echo "$out" | head -1
  [[ $rc -eq 0 ]] && grep -q "PASS" <<<"$out" || { echo "FAIL: memra gate $g rc=$rc"; fail=1; }
done
python3 -c "import json; p='$w/dump/manifest.json'; m=json.load(open(p)); m['geometry']['index_topk'] += 3; json.dump(m, open(p,'w'))"
out=$("$bin" -q gate parity "$w/model" "$w/dump" 2>&1); rc=$?
echo "$out"
[[ $rc -eq 1 ]] && grep -q "^\[parity\] REFUSED .*index_topk" <<<"$out" || { echo "FAIL: parity gate on a wrong-geometry dump rc=$rc"; fail=1; }
[[ $fail -eq 0 ]] && rm -rf "$w" && echo "1 passed, 0 failed"
exit $fail
