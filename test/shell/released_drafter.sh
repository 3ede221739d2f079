#!/usr/bin/env bash
# shell.released_drafter: a released checkpoint's own DSpark drafter through the CLI, on
# models/tiny-dspark-released (models/tiny in the released layout, FP8 + FP4 experts, with
# tiny-dspark-trained as FP8/FP4/BF16 mtp.* tensors and dspark_* config fields):
# - `memra draft MODEL` without --drafter uses it: lossless speculative generation, tau > 1;
# - it proposes exactly what the separate drafter folder that tools/oracle/extract_drafter.py
#   writes from the same folder (config from the dspark_* fields, weights dequantised by torch)
#   proposes: ids and confidence logits equal, for several prompts and block sizes, and the same
#   speculative tokens and acceptance;
# - --drafter MODEL works in draft, restore and the drafter gates;
# - a folder without a drafter of its own, or with a field missing, is refused naming it.
# Missing / corrupt mtp tensors: test/released_drafter_test.cpp. Env (CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
ok() { echo "ok: $1"; }
bad() { fail=1; echo "FAIL: $1"; }

M="$src/models/tiny-dspark-released"
P="$src/models/prompt.txt"

# 1. memra draft MODEL: the model's own drafter.
"$bin" -q draft "$M" --tokens "$P" --steps 40 --ignore-eos --json > "$work/own.json"; rc=$?
got=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["identical_to_greedy"], len(j["tokens"]), j["tau"] > 1.2, j["family"], j["drafter"] == sys.argv[2])' "$work/own.json" "$M")
[[ $rc -eq 0 && "$got" == "True 40 True dspark True" ]] && ok "draft MODEL (own drafter): lossless, 40 tokens, tau > 1.2 ($(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["tau"], 3))' "$work/own.json"))" \
  || bad "draft MODEL: rc=$rc $got"
# Its own EOS (token 1, the 44th greedy token here) ends generation for both decodings.
got=$("$bin" -q draft "$M" --tokens "$P" --steps 64 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["tokens"]), j["tokens"][-1], j["finish_reason"], j["identical_to_greedy"])')
[[ "$got" == "44 1 eos True" ]] && ok "draft MODEL stops at its EOS: $got" || bad "draft EOS: $got"

# 2. The same drafter as a separate folder, extracted and dequantised by the oracle (torch).
"$venv/bin/python" "$src/tools/oracle/extract_drafter.py" "$M" --out "$work/extracted" 2> "$work/extract.err" \
  || { bad "extract_drafter.py: $(cat "$work/extract.err")"; exit 1; }
n=0
for tokens in "$P" "3 5 7 11 13 17 19 23 29 31 37 41 43" "500 2 499 3"; do
  printf '%s\n' "$tokens" > "$work/t.txt"; [[ -f "$tokens" ]] && cp "$tokens" "$work/t.txt"
  for b in 2 5 8; do
    a=$("$bin" -q draft "$M" --tokens "$work/t.txt" --propose --block-size "$b" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["drafts"], j["confidence_logits"])')
    e=$("$bin" -q draft "$M" --drafter "$work/extracted" --tokens "$work/t.txt" --propose --block-size "$b" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["drafts"], j["confidence_logits"])')
    if [[ -n "$a" && "$a" == "$e" ]]; then n=$((n + 1)); else bad "block $b, prompt '${tokens:0:20}': own $a vs extracted $e"; fi
  done
done
[[ $n -eq 9 ]] && ok "own drafter = extracted separate drafter: identical drafts and confidence logits (3 prompts x blocks 2, 5, 8)"
a=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["tokens"], j["accepted_histogram"])' "$work/own.json")
e=$("$bin" -q draft "$M" --drafter "$work/extracted" --tokens "$P" --steps 40 --ignore-eos --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["tokens"], j["accepted_histogram"])')
[[ "$a" == "$e" ]] && ok "identical speculative tokens and acceptance histogram" || bad "speculative: own $a vs extracted $e"

# 3. --drafter MODEL everywhere a drafter folder goes; its state comes back with it.
expect 0 "lossless" -- "$bin" draft "$src/models/tiny" --drafter "$M" --tokens "$P" --steps 16 --ignore-eos
"$bin" -q draft "$M" --drafter "$M" --tokens "$P" --steps 8 --ignore-eos -o "$work/s.mst" > /dev/null || bad "draft -o"
expect 0 "restored" -- "$bin" restore "$work/s.mst" --model "$M" --drafter "$M" --steps 4 --ignore-eos
expect 1 "drafter" -- "$bin" restore "$work/s.mst" --model "$M" --drafter "$work/extracted" --steps 4
expect 0 "PASS" -- "$bin" gate drafter-restore "$M" --drafter "$M" --tokens "$P"

# 4. Refusals: no drafter of its own, a field missing (the weights linked, config.json edited).
expect 2 "declares no DSpark drafter (no dspark_block_size)" -- "$bin" draft "$src/models/tiny" --tokens "$P"
expect 2 "give --drafter DIR" -- "$bin" draft "$src/models/tiny-fp4" --tokens "$P"
mkdir "$work/partial"
ln -s "$M/model.safetensors" "$work/partial/model.safetensors"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); del c["dspark_target_layer_ids"]; json.dump(c, open(sys.argv[2], "w"))' \
  "$M/config.json" "$work/partial/config.json"
expect 2 "config.json dspark_target_layer_ids is missing" -- "$bin" draft "$work/partial" --tokens "$P"
expect 2 "dspark_target_layer_ids" -- "$bin" gate speculative "$src/models/tiny" --drafter "$work/partial"

[[ $fail -eq 0 ]] && echo "released_drafter: all passed" || echo "released_drafter: FAILED"
exit $fail
