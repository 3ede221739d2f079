#!/usr/bin/env bash
# shell.prompt_text: text in and out on the bundled models that ship a tokenizer.json (tiny: V4
# style, no BOS template; tiny-bf16: V3 style, BOS template). `memra prefill M --prompt TEXT
# --generate 32` prints the continuation as text that the `tokenizers` library (oracle venv) decodes
# identically from the generated ids, and that round-trips through its encode/decode; --prompt runs
# exactly the ids tokenizers encodes (same generated ids and logits hash as --tokens with them);
# @FILE, --chat, restore --prompt --steps, gate --prompt; and the usage errors.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/memra-prompt.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail=0; pass=0
ok() { pass=$((pass+1)); echo "ok: $1"; }
bad() { fail=$((fail+1)); echo "FAIL: $1"; }

text=$'The quick brown fox, 123 日本語 😀\n  def f(x): return x'
for m in tiny tiny-bf16; do
  M="$src/models/$m"
  "$bin" -q prefill "$M" --prompt "$text" --generate 32 > "$work/$m.txt" 2> "$work/$m.err"; rc=$?
  [[ $rc -eq 0 && ! -s "$work/$m.err" ]] && ok "$m: prefill --prompt --generate 32 prints text only" \
    || bad "$m: rc=$rc $(cat "$work/$m.err")"
  "$bin" -q prefill "$M" --prompt "$text" --generate 32 --json > "$work/$m.json"
  # The reference tokenizer: encode the prompt, decode the generated ids, round-trip the text.
  "$py" - "$M/tokenizer.json" "$work/$m.txt" "$work/$m.json" "$text" "$work/$m.ids" <<'PY' && ok "$m: text equals tokenizers' decode of the generated ids and round-trips" || bad "$m: tokenizers disagree"
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
printed = open(sys.argv[2], "rb").read()
j = json.load(open(sys.argv[3]))
ids = tok.encode(sys.argv[4]).ids
open(sys.argv[5], "w").write(" ".join(map(str, ids)))
assert j["tokens"] == len(ids), (j["tokens"], len(ids))
assert len(j["generated"]) == 32
ref = tok.decode(j["generated"])
assert printed == ref.encode("utf-8"), (printed, ref)
assert j["text"] == ref
assert len(printed) > 0, "the continuation printed nothing"
again = tok.decode(tok.encode(ref, add_special_tokens=False).ids)
assert again == ref, (again, ref)
print(f"{len(ids)} prompt ids, {len(j['generated'])} generated, text {ref!r}")
PY
  a=$("$bin" -q prefill "$M" --prompt "$text" --generate 32 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["last_logits_xxh3"], j["generated"])')
  b=$("$bin" -q prefill "$M" --tokens "$work/$m.ids" --generate 32 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["last_logits_xxh3"], j["generated"])')
  [[ -n "$a" && "$a" == "$b" ]] && ok "$m: --prompt runs tokenizers' ids (same logits hash and continuation as --tokens)" \
    || bad "$m: --prompt '$a' vs --tokens '$b'"
  printf '%s' "$text" > "$work/prompt.txt"
  cmp -s <("$bin" -q prefill "$M" --prompt @"$work/prompt.txt" --generate 32) "$work/$m.txt" \
    && ok "$m: --prompt @FILE reads the file" || bad "$m: @FILE differs"
done

M="$src/models/tiny"
n=$("$bin" -q prefill "$M" --prompt "hi" --chat --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
want=$("$bin" tokenize "$M" --chat "hi" | wc -w)
[[ "$n" == "$want" ]] && ok "--chat: the chat template's ids ($n)" || bad "--chat ran $n tokens, tokenize --chat gives $want"

"$bin" -q prefill "$M" --prompt "$text" -o "$work/a.mst" > /dev/null
"$bin" -q restore "$work/a.mst" --model "$M" --prompt " and more" --steps 16 > "$work/r.txt"; rc=$?
"$bin" -q restore "$work/a.mst" --model "$M" --prompt " and more" --steps 16 --json > "$work/r.json"
"$py" - "$M/tokenizer.json" "$work/r.txt" "$work/r.json" <<'PY' && [[ $rc -eq 0 ]] && ok "restore --prompt --steps prints the continuation as text" || bad "restore --prompt rc=$rc"
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
j = json.load(open(sys.argv[3]))
assert j["forced_tokens"] == len(tok.encode(" and more", add_special_tokens=False).ids)
assert open(sys.argv[2], "rb").read() == tok.decode(j["generated"]).encode("utf-8")
PY

out=$("$bin" -q gate restore "$M" --prompt "$text" --json); rc=$?
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); assert r["result"]=="PASS", r' "$out" 2>/dev/null && [[ $rc -eq 0 ]] \
  && ok "gate restore --prompt TEXT" || bad "gate restore --prompt rc=$rc: $out"

err=$("$bin" prefill "$M" --prompt "x" --tokens "$work/tiny.ids" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == *"--prompt"* ]] && ok "--prompt with --tokens: usage error" || bad "--prompt --tokens rc=$rc: $err"
err=$("$bin" prefill "$M" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == "memra: error: no prompt given"* ]] && ok "no prompt: exit 2" || bad "no prompt rc=$rc: $err"
err=$("$bin" prefill "$src/models/tiny-fp8" --prompt "x" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && "$err" == "memra: error: no tokenizer.json in "* ]] && ok "--prompt without tokenizer.json: exit 2" \
  || bad "no tokenizer rc=$rc: $err"
err=$("$bin" prefill "$M" --tokens "$work/tiny.ids" --chat 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 ]] && ok "--chat needs --prompt" || bad "--chat without --prompt rc=$rc"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]] && echo PASS
exit $(( fail > 0 ))
