#!/usr/bin/env bash
# shell.cli_basics: the conventions every subcommand shares: --help lists the seven commands,
# --version prints version and commit, usage errors are one `memra: error:` line plus a hint and
# exit 2, a closed stdout pipe is not an error, and `memra draft` without its model is a usage error (exit 2).
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
fail=0; pass=0
ok() { pass=$((pass+1)); echo "ok: $1"; }
bad() { fail=$((fail+1)); echo "FAIL: $1"; }

help=$("$bin" --help)
for c in load prefill snapshot restore draft parity gate; do
  grep -Eq "^  $c( |$)" <<<"$help" && ok "--help lists $c" || bad "--help does not list $c"
done
"$bin" --version | grep -Eq '^memra [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}|unknown\)' && ok "--version" || bad "--version: $("$bin" --version)"

err=$("$bin" load --no-such-flag 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == "memra: error: "* && "$err" == *"memra: hint: "* ]] && ok "usage error exit 2 with hint" || bad "usage error rc=$rc: $err"
err=$("$bin" load /nonexistent 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && $(wc -l <<<"$err") -le 2 && "$err" == "memra: error: "* ]] && ok "missing model folder exit 2" || bad "missing model rc=$rc: $err"
err=$("$bin" draft 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == *"model is required"* ]] && ok "draft without a model is a usage error" || bad "draft rc=$rc: $err"

# Broken pipe: the reader goes away after 10 bytes of a 327 KB stream; memra exits 0, quietly.
seq 2 161 | tr '\n' ' ' > "${TMPDIR:-/tmp}/memra-cli-basics-tokens.txt"
for flag in --logits -o; do
  err=$( { "$bin" -q prefill "$src/models/tiny" --tokens "${TMPDIR:-/tmp}/memra-cli-basics-tokens.txt" $flag - | head -c 10 >/dev/null; exit "${PIPESTATUS[0]}"; } 2>&1 ); rc=$?
  [[ $rc -eq 0 && -z "$err" ]] && ok "closed pipe on $flag - exits 0 quietly" || bad "closed pipe on $flag -: rc=$rc err=$err"
done

# Output files are atomic: a failing run leaves no partial file behind.
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
echo "1 2 99999" > "$w/bad.txt"
"$bin" -q prefill "$src/models/tiny" --tokens "$w/bad.txt" -o "$w/s.mst" --logits "$w/l.npy" 2>/dev/null; rc=$?
[[ $rc -eq 2 && -z "$(ls -A "$w" | grep -v bad.txt)" ]] && ok "failed prefill leaves no files" || bad "failed prefill rc=$rc files: $(ls -A "$w")"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
