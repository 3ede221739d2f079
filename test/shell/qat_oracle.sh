#!/usr/bin/env bash
# shell.qat_oracle: memra --qat against the oracle's own QAT forward (tools/oracle/qat_sim.py, the
# official inference code's FP8 window/compressed kv and Hadamard+FP4 indexer q/k installed into
# transformers' reference): a --qat dump of models/tiny passes `memra parity --qat` on cpu and
# cpu-fast (every stage, cpu-f32 tolerances); the dump refuses a run without --qat and the plain
# dump refuses a --qat run (exit 1); a state written with --qat restores only with --qat.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/memra-qat.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail=0; pass=0
ok() { pass=$((pass+1)); echo "ok: $1"; }
bad() { fail=$((fail+1)); echo "FAIL: $1"; }
M="$src/models/tiny"

if ! "$venv/bin/python" "$src/tools/oracle/dump_reference.py" "$M" --out "$work/dump" --tokens 80 --seed 14 --qat > "$work/oracle.log" 2>&1; then
  echo "FAIL: the oracle's QAT dump failed"; cat "$work/oracle.log"; exit 1
fi
for backend in cpu cpu-fast; do
  out=$("$bin" -q parity "$M" "$work/dump" --qat --backend "$backend" 2>&1); rc=$?
  [[ $rc -eq 0 && "$out" == *"[parity] ALL PASS"* ]] && ok "parity --qat --backend $backend vs the oracle's QAT forward" \
    || { bad "parity --qat --backend $backend rc=$rc"; echo "$out" | tail -15; }
done
out=$("$bin" -q parity "$M" "$work/dump" 2>&1); rc=$?
[[ $rc -eq 1 && "$out" == *"REFUSED"*"add --qat"* ]] && ok "the QAT dump refuses a run without --qat" || bad "no --qat rc=$rc: $out"
out=$("$bin" -q parity "$M" "$M/dump" --qat 2>&1); rc=$?
[[ $rc -eq 1 && "$out" == *"REFUSED"*"(--qat)"* ]] && ok "a plain dump refuses a --qat run" || bad "plain dump --qat rc=$rc: $out"

echo "2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21" > "$work/t.txt"
"$bin" -q prefill "$M" --tokens "$work/t.txt" --qat -o "$work/q.mst" > /dev/null || bad "prefill --qat -o"
err=$("$bin" -q restore "$work/q.mst" --model "$M" --steps 2 2>&1 >/dev/null); rc=$?
[[ $rc -eq 1 && "$err" == "memra: error: "*"QAT simulations"* && "$err" == *"hint: add --qat"* ]] \
  && ok "a --qat state refuses a restore without --qat" || bad "restore without --qat rc=$rc: $err"
"$bin" -q restore "$work/q.mst" --model "$M" --steps 2 --qat > /dev/null && ok "it restores with --qat" || bad "restore --qat"
err=$("$bin" -q prefill "$M" --tokens "$work/t.txt" --qat --backend cuda 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == *"--qat is implemented on the CPU realizations only"* ]] && ok "--qat --backend cuda: exit 2" \
  || bad "--qat cuda rc=$rc: $err"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]] && echo PASS
exit $(( fail > 0 ))
