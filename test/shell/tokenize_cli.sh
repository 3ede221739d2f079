#!/usr/bin/env bash
# shell.tokenize_cli: memra tokenize on the bundled tokenizers: text → ids → text round trips
# (literal, @FILE, stdin), the ids feed `memra prefill --tokens`, --json, --chat (DeepSeek-V4's
# template), the BOS template and --no-special, invalid UTF-8 read as U+FFFD with a note, and
# errors (bad ids, no tokenizer.json) as one `memra: error:` line with exit 2.
# Token-for-token agreement with the tokenizers library is test/tokenizer_test.cpp.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
tiny="$src/models/tiny"
work="$(mktemp -d "${TMPDIR:-/tmp}/memra-tokenize.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail=0; pass=0
ok() { pass=$((pass+1)); echo "ok: $1"; }
bad() { fail=$((fail+1)); echo "FAIL: $1"; }

text=$'Hello, world! 123 日本語 😀\n  def f(x): return x'
ids=$("$bin" tokenize "$tiny" "$text"); rc=$?
[[ $rc -eq 0 && "$ids" =~ ^[0-9]+( [0-9]+)*$ ]] && ok "encode prints ids on one line" || bad "encode rc=$rc: $ids"
back=$("$bin" tokenize "$tiny" --decode "$ids"; echo x); back="${back%x}"
[[ "$back" == "$text" ]] && ok "decode(encode(text)) == text" || bad "round trip gave: $back"
printf '%s' "$text" > "$work/in.txt"
[[ "$("$bin" tokenize "$tiny" @"$work/in.txt")" == "$ids" ]] && ok "@FILE reads the file" || bad "@FILE differs"
[[ "$(printf '%s' "$text" | "$bin" tokenize "$tiny" -)" == "$ids" ]] && ok "- reads stdin" || bad "stdin differs"
echo "$ids" > "$work/ids.txt"
[[ "$("$bin" tokenize "$tiny" --decode @"$work/ids.txt"; echo x)" == "${text}x" ]] && ok "--decode @FILE" || bad "--decode @FILE"

"$bin" tokenize "$tiny" "$text" > "$work/t.txt" && "$bin" -q prefill "$tiny" --tokens "$work/t.txt" > "$work/prefill.out" 2>&1 \
  && ok "the ids feed memra prefill --tokens" || bad "prefill --tokens on tokenize output: $(cat "$work/prefill.out")"

json=$("$bin" tokenize "$tiny" "$text" --json)
python3 - "$json" "$ids" <<'PY' && ok "--json: ids, tokens, count" || bad "--json: $json"
import json, sys
j = json.loads(sys.argv[1])
ids = [int(x) for x in sys.argv[2].split()]
assert j["ids"] == ids and j["count"] == len(ids) and len(j["tokens"]) == len(ids), j
PY

chat=$("$bin" tokenize "$tiny" --chat "hi")
[[ "$chat" == "0 3 "*" 4 6" ]] && ok "--chat: BOS <｜User｜> … <｜Assistant｜> </think>" || bad "--chat gave $chat"
[[ "$("$bin" tokenize "$tiny" --decode "$chat")" == "hi</think>" ]] && ok "decode drops special tokens (not </think>)" || bad "decode of chat ids"
[[ "$("$bin" tokenize "$tiny" --decode --keep-special "$chat")" == "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜></think>" ]] \
  && ok "--keep-special keeps them" || bad "--keep-special"

bf="$src/models/tiny-bf16"
a=$("$bin" tokenize "$bf" "hi"); b=$("$bin" tokenize "$bf" --no-special "hi")
[[ "$a" == "0 $b" ]] && ok "BOS template adds 0; --no-special does not" || bad "BOS template: '$a' vs '$b'"

printf 'ok\xffok' > "$work/bad.txt"
out=$("$bin" tokenize "$tiny" @"$work/bad.txt" 2> "$work/err"); rc=$?
[[ $rc -eq 0 && "$(cat "$work/err")" == *"not valid UTF-8"* && "$("$bin" tokenize "$tiny" --decode "$out")" == "ok"$'\xef\xbf\xbd'"ok" ]] \
  && ok "invalid UTF-8 is read as U+FFFD with a note" || bad "invalid UTF-8: rc=$rc $(cat "$work/err")"

err=$("$bin" tokenize "$tiny" --decode "1 2 x" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == "memra: error: "* ]] && ok "bad ids: exit 2" || bad "bad ids rc=$rc: $err"
err=$("$bin" tokenize "$tiny" --decode "5 99999" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 0 && "$err" == *"skipped"* ]] && ok "unknown ids are skipped with a note" || bad "unknown ids rc=$rc: $err"
err=$("$bin" tokenize "$work" "x" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == "memra: error: no tokenizer.json in "* ]] && ok "no tokenizer.json: exit 2" || bad "no tokenizer rc=$rc: $err"
err=$("$bin" tokenize "$tiny" --decode --chat "1" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] && ok "--chat with --decode is a usage error" || bad "--chat --decode rc=$rc"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]] && echo PASS
exit $(( fail > 0 ))
