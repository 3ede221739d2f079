#!/usr/bin/env bash
# shell.draft_cli: `memra draft` end to end on the bundled trunk and the committed drafters of both
# families: speculative generation identical to plain greedy (exit 0, JSON fields present), -o writes
# a state file (format 1.1) with the drafter's classes; `memra draft --state --propose` and
# `memra restore --drafter` bring it back (same proposal as the uninterrupted state; restore
# continues it and its output state drafts losslessly again); restoring it without the drafter, with another
# drafter, or proposing from a state without drafter classes is refused (exit 1, one error line +
# hint); usage errors exit 2.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
bin="${MEMRA_BIN:-memra}"
m="$src/models/tiny"
d="$src/models/drafters"
echo "7 300 12 45 99 410 3 77 250 18 64 128 5 333 401 21" > "$work/prompt.txt"
for f in tiny-dspark tiny-dflash-trained; do
  expect 0 "lossless: identical to plain greedy" -- "$bin" -q draft "$m" --drafter "$d/$f" --tokens "$work/prompt.txt" --steps 48 --block-size 4
  "$bin" -q draft "$m" --drafter "$d/$f" --tokens "$work/prompt.txt" --steps 24 --json -o "$work/$f.state" > "$work/$f.json"
  expect 0 "ok" -- python3 -c "
import json,sys
j=json.load(open('$work/$f.json'))
for k in ['tau','acceptance_by_position','drafts_per_s','speculative_tokens_per_s','greedy_tokens_per_s','speedup','tokens']:
    assert k in j, k
assert j['identical_to_greedy'] and len(j['tokens'])==24 and j['tau']>=1, j
print('ok')"
  expect 0 "format 1.1 with drafter classes" -- python3 -c "
import json,struct
b=open('$work/$f.state','rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); md=h['__metadata__']
assert md['format_version']=='1.1' and 'drafter_fingerprint' in md, md
assert any(k.startswith('drafter.') for k in h), list(h)
print('format 1.1 with drafter classes')"
  # The uninterrupted state: prompt + the 24 generated tokens, primed in one go.
  python3 -c "import json; j=json.load(open('$work/$f.json')); print(open('$work/prompt.txt').read().strip(), ' '.join(map(str, j['tokens'])))" > "$work/all.txt"
  want=$("$bin" -q draft "$m" --drafter "$d/$f" --tokens "$work/all.txt" --propose --json | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['drafts'], j['confidence_logits'])")
  got=$("$bin" -q draft "$m" --drafter "$d/$f" --state "$work/$f.state" --propose --json | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['drafts'], j['confidence_logits'])")
  if [[ -n "$want" && "$want" == "$got" ]]; then echo "ok: $f restored proposal = uninterrupted ($got)"; else echo "FAIL: $f proposal '$got' != '$want'"; fail=1; fi
  expect 0 "restored" -- "$bin" -q restore "$work/$f.state" --model "$m" --drafter "$d/$f" --steps 5 -o "$work/$f.2.state"
  expect 0 "lossless" -- "$bin" -q draft "$m" --drafter "$d/$f" --state "$work/$f.2.state" --steps 8
  expect 1 "belongs to a drafter" -- "$bin" -q restore "$work/$f.state" --model "$m"
done
expect 1 "not with this one" -- "$bin" -q restore "$work/tiny-dspark.state" --model "$m" --drafter "$d/tiny-dflash-trained"
"$bin" -q prefill "$m" --tokens "$work/prompt.txt" -o "$work/plain.state" > /dev/null
expect 1 "holds no drafter state" -- "$bin" -q draft "$m" --drafter "$d/tiny-dspark" --state "$work/plain.state" --propose
expect 2 "give --tokens or --state" -- "$bin" -q draft "$m" --drafter "$d/tiny-dspark"
expect 2 "exact realization" -- "$bin" -q draft "$m" --drafter "$d/tiny-dspark" --tokens "$work/prompt.txt" --backend cpu-fast
expect 2 "no drafts" -- "$bin" -q draft "$m" --drafter "$d/tiny-dflash-trained" --tokens "$work/prompt.txt" --block-size 1
exit $fail
