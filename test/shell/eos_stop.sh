#!/usr/bin/env bash
# shell.eos_stop: generation stops after the model's end-of-sequence token (generation_config.json's
# eos_token_id, else config.json's; an id or a list) in prefill --generate, restore --steps and
# draft, the token emitted and fed (the state ends after it); --ignore-eos generates the full count;
# text streamed from --prompt ends cleanly (the EOS is not printed); gates keep their fixed count.
# tiny-bf16 (eos 1) reaches its EOS by itself from models/prompt.txt (63rd token) and from
# --prompt "Hello, world"; the other cases use a copy of models/tiny whose declared EOS is a token
# its own continuation produces. Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
ok() { echo "ok: $1"; }
bad() { fail=1; echo "FAIL: $1"; }
field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"j": j}))' "$@"; }

P="$src/models/prompt.txt"
B="$src/models/tiny-bf16"

# 1. A declared EOS reached naturally: 63 tokens, the last one the EOS, position prompt + 63.
"$bin" -q prefill "$B" --tokens "$P" --generate 100 --json -o "$work/eos.mst" > "$work/eos.json" || bad "prefill rc"
"$bin" -q prefill "$B" --tokens "$P" --generate 100 --json --ignore-eos > "$work/all.json" || bad "prefill --ignore-eos rc"
got=$(field "$work/eos.json" '(len(j["generated"]), j["generated"][-1], j["finish_reason"], j["position"])')
[[ "$got" == "(63, 1, 'eos', 133)" ]] && ok "tiny-bf16: --generate 100 stops at EOS 1: $got" || bad "tiny-bf16 stop: $got"
got=$(field "$work/all.json" '(len(j["generated"]), j["finish_reason"], j["position"])')
[[ "$got" == "(100, 'length', 170)" ]] && ok "--ignore-eos generates all 100: $got" || bad "--ignore-eos: $got"
same=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["generated"]; b=json.load(open(sys.argv[2]))["generated"]; print(a == b[:len(a)])' "$work/eos.json" "$work/all.json")
[[ "$same" == True ]] && ok "the stopped continuation is a prefix of the full one" || bad "prefix: $same"
expect 0 "generation stopped at end-of-sequence token 1 after 63 of 100 tokens" -- \
  "$bin" prefill "$B" --tokens "$P" --generate 100
# The state ends after the EOS: it equals a prefill of prompt + the 63 tokens.
python3 -c 'import json,sys; print(" ".join(map(str, list(range(2, 141, 2)) + json.load(open(sys.argv[1]))["generated"])))' \
  "$work/eos.json" > "$work/p63.txt"
"$bin" -q prefill "$B" --tokens "$work/p63.txt" -o "$work/p63.mst" > /dev/null
expect 0 "identical" -- "$bin" snapshot "$work/eos.mst" --diff "$work/p63.mst"

# restore --steps stops too (and --logits holds one row per generated token); --ignore-eos does not.
"$bin" -q prefill "$B" --tokens "$P" -o "$work/p.mst" > /dev/null
"$bin" -q restore "$work/p.mst" --model "$B" --steps 80 --json --logits "$work/l.npy" > "$work/r.json" || bad "restore rc"
got=$(field "$work/r.json" '(len(j["generated"]), j["finish_reason"], j["position"])')
[[ "$got" == "(63, 'eos', 133)" ]] && ok "restore --steps 80 stops at EOS: $got" || bad "restore: $got"
rows=$(python3 -c 'import sys; h=open(sys.argv[1],"rb").read(256).decode("latin1"); print(h[h.index("shape"):].split(")")[0])' "$work/l.npy")
[[ "$rows" == *"(63, 512"* ]] && ok "restore --logits: one row per generated token ($rows)" || bad "logits rows: $rows"
got=$("$bin" -q restore "$work/p.mst" --model "$B" --steps 80 --ignore-eos --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["generated"]), j["finish_reason"])')
[[ "$got" == "80 length" ]] && ok "restore --ignore-eos: $got" || bad "restore --ignore-eos: $got"

# 2. Streamed text ends cleanly at the EOS: the printed bytes are the text of the ids before it.
"$bin" -q prefill "$B" --prompt "Hello, world" --generate 64 > "$work/t.txt" 2> "$work/t.err" || bad "text rc"
"$bin" -q prefill "$B" --prompt "Hello, world" --generate 64 --json > "$work/t.json"
got=$(field "$work/t.json" '(len(j["generated"]), j["generated"][-1], j["finish_reason"])')
[[ "$got" == "(50, 1, 'eos')" ]] && ok "--prompt: the continuation stops at EOS: $got" || bad "text stop: $got"
python3 -c 'import json,sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["generated"][:-1])))' "$work/t.json" > "$work/t.ids"
"$bin" tokenize "$B" --decode @"$work/t.ids" > "$work/t.ref"
if cmp -s "$work/t.txt" <(printf '%s' "$(cat "$work/t.ref")") && [[ ! -s "$work/t.err" ]] && ! grep -q "end▁of▁sentence" "$work/t.txt"; then
  ok "streamed text = decode of the 49 ids before the EOS, nothing after ($(wc -c < "$work/t.txt") bytes)"
else
  bad "streamed text differs: $(head -c 200 "$work/t.txt") vs $(head -c 200 "$work/t.ref")"
fi
"$bin" -q prefill "$B" --prompt "Hello, world" --generate 64 --ignore-eos --json > "$work/t2.json"
got=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print(len(b["generated"]), b["text"].startswith(a["text"]) and len(b["text"]) > len(a["text"]))' "$work/t.json" "$work/t2.json")
[[ "$got" == "64 True" ]] && ok "--prompt --ignore-eos: 64 tokens, its text extends the stopped one" || bad "text --ignore-eos: $got"

# 3. Where the EOS is declared: a copy of models/tiny (weights and tokenizer linked).
T="$work/tiny"; mkdir "$T"
ln -s "$src/models/tiny/model.safetensors" "$T/model.safetensors"
ln -s "$src/models/tiny/tokenizer.json" "$T/tokenizer.json"
"$bin" -q prefill "$src/models/tiny" --tokens "$P" --generate 40 --ignore-eos --json > "$work/g.json"
read -r e5 e9 <<<"$(field "$work/g.json" '" ".join(map(str, [j["generated"][5], j["generated"][9]]))')"
k5=$(field "$work/g.json" "j['generated'].index($e5)"); k9=$(field "$work/g.json" "j['generated'].index($e9)")
cfg() {  # cfg EOS_JSON: config.json = tiny's with eos_token_id = EOS_JSON
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["eos_token_id"]=json.loads(sys.argv[2]); json.dump(c, open(sys.argv[3], "w"), indent=1)' \
    "$src/models/tiny/config.json" "$1" "$T/config.json"
}
n_of() { "$bin" -q prefill "$T" --tokens "$P" --generate 40 --json "$@" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["generated"]), j["finish_reason"])'; }
cfg "[511, $e5]"
got=$(n_of); [[ "$got" == "$((k5 + 1)) eos" ]] && ok "config.json eos_token_id list [511, $e5]: stops after $got" || bad "list: $got (want $((k5 + 1)))"
cfg "$e5"
got=$(n_of); [[ "$got" == "$((k5 + 1)) eos" ]] && ok "config.json eos_token_id $e5 (int): $got" || bad "int: $got"
echo "{\"eos_token_id\": $e9}" > "$T/generation_config.json"
got=$(n_of); [[ "$got" == "$((k9 + 1)) eos" ]] && ok "generation_config.json's eos_token_id $e9 wins over config.json's: $got" || bad "generation_config: $got (want $((k9 + 1)))"
echo '{"eos_token_id": null, "bos_token_id": 0}' > "$T/generation_config.json"
got=$(n_of); [[ "$got" == "$((k5 + 1)) eos" ]] && ok "generation_config.json without an eos falls back to config.json: $got" || bad "fallback: $got"
cfg "null"; rm "$T/generation_config.json"
got=$(n_of); [[ "$got" == "40 length" ]] && ok "no EOS declared: all 40: $got" || bad "none: $got"
echo '{"eos_token_id": "x"}' > "$T/generation_config.json"
expect 2 "generation_config.json eos_token_id holds \"x\", which is not a token id" -- "$bin" prefill "$T" --tokens "$P" --generate 4
expect 0 "prefill 70 tokens" -- "$bin" prefill "$T" --tokens "$P" --generate 4 --ignore-eos
echo '{"eos_token_id": [1, 512]}' > "$T/generation_config.json"
expect 2 "eos_token_id = 512 is outside the vocabulary" -- "$bin" prefill "$T" --tokens "$P" --generate 4
echo '{"eos_token_id": ' > "$T/generation_config.json"
expect 2 "generation_config.json" -- "$bin" prefill "$T" --tokens "$P" --generate 4
expect 0 "prefill 70 tokens" -- "$bin" prefill "$T" --tokens "$P"  # no generation: the file is not read
rm "$T/generation_config.json"

# 4. memra draft stops at the EOS, speculative and plain greedy alike; gates keep their count.
D="$src/models/drafters/tiny-dspark-trained"
cfg "$e9"
"$bin" -q draft "$T" --drafter "$D" --tokens "$P" --steps 40 --json -o "$work/d.mst" > "$work/d.json"; rc=$?
got=$(field "$work/d.json" '(len(j["tokens"]), j["finish_reason"], j["identical_to_greedy"])')
[[ $rc -eq 0 && "$got" == "($((k9 + 1)), 'eos', True)" ]] && ok "draft --steps 40 stops at EOS $e9 (lossless): $got" || bad "draft: rc=$rc $got"
expect 0 "position  *$((70 + k9 + 1))$" -- "$bin" snapshot "$work/d.mst"
got=$("$bin" -q draft "$T" --drafter "$D" --tokens "$P" --steps 40 --ignore-eos --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["tokens"]), j["finish_reason"], j["identical_to_greedy"])')
[[ "$got" == "40 length True" ]] && ok "draft --ignore-eos: $got" || bad "draft --ignore-eos: $got"
expect 0 "stopped at end-of-sequence token $e9" -- "$bin" draft "$T" --drafter "$D" --tokens "$P" --steps 40
# Tokens the gate's speculative run emitted: every round commits its accepted drafts + 1.
got=$("$bin" -q gate speculative "$T" --drafter "$D" --tokens "$P" --runs 1 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["result"], sum((k + 1) * n for k, n in enumerate(j["details"]["accepted_histogram"])))' 2>&1)
[[ "$got" == "PASS 96" ]] && ok "gate speculative keeps its fixed count past the EOS at token $k9: $got" || bad "gate: $got"

[[ $fail -eq 0 ]] && echo "eos_stop: all passed" || echo "eos_stop: FAILED"
exit $fail
