#!/usr/bin/env bash
# shell.drafter_parity_fresh: on random drafters the suite has never seen (a new seed every run,
# printed so a failure can be replayed with MEMRA_DRAFTER_SEEDS), one DSpark and one DFlash-family
# drafter with random geometry (stages/layers, heads, windows shorter or longer than the context,
# causal and sliding layers, hc_mult 1-4, block sizes 2-16, both harvest conventions, Markov and
# confidence heads on or off) pass drafter parity against the oracle (z-lab's dflash package /
# the DSpark oracle on transformers' DeepSeek-V4 modules) with the bundled trunk: ALL PASS; and
# speculative decoding with each of them (`memra draft`, a block size 2-16 from the seed, the dump's
# harvest) emits exactly plain greedy's tokens.
# Needs the oracle venv; without it the test FAILS, it does not skip.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
seeds="${MEMRA_DRAFTER_SEEDS:-$(( $(date +%s%N) / 1000 % 1000000007 ))}"
echo "seeds: $seeds (replay: MEMRA_DRAFTER_SEEDS=\"$seeds\")"
work="$(mktemp -d "${MEMRA_BUILD:-/tmp}/drafter_fresh.XXXXXX")"
fail=0
for seed in $seeds; do
  if ! MEMRA_PYTHON="$venv/bin/python" "$src/tools/oracle/fresh_drafter_case.sh" "$seed" "$work/$seed" > "$work/$seed.case" 2>&1; then
    echo "FAIL: seed $seed: oracle failed"; cat "$work/$seed.case"; fail=1; continue
  fi
  while read -r family drafter dump; do
    "$bin" -q parity "$src/models/tiny" --drafter "$drafter" "$dump" > "$work/$seed.$family.out" 2>&1
    rc=$?
    summary=$(python3 -c "
import json; c = json.load(open('$drafter/config.json')); g = json.load(open('$dump/manifest.json'))['geometry']
print(f\"layers={c['num_hidden_layers']} block={g['block_size']} harvest={g['harvest']} ctx={g['ctx']} \"
      f\"window={g['sliding_window']} sliding={g['layer_sliding']} causal={g['layer_causal']} markov={g['markov_rank']} \"
      f\"confidence={g['confidence']['enabled']}\")")
    echo "seed $seed $family: $summary rc=$rc $(tail -1 "$work/$seed.$family.out")"
    if [[ $rc -ne 0 ]]; then cat "$work/$seed.$family.out"; echo "FAIL: seed $seed $family (files kept in $work)"; fail=1; fi
    harvest=$(python3 -c "import json; print(json.load(open('$dump/manifest.json'))['geometry']['harvest'])")
    off=0; [[ $family == dflash ]] && off=7
    block=$(( 2 + (seed + off) % 15 ))
    python3 -c "import random; r=random.Random($seed); print(' '.join(str(r.randrange(2,512)) for _ in range(12)))" > "$work/$seed.prompt"
    "$bin" -q draft "$src/models/tiny" --drafter "$drafter" --tokens "$work/$seed.prompt" --steps 40 \
      --block-size "$block" --harvest "$harvest" > "$work/$seed.$family.draft" 2>&1
    rc=$?
    echo "seed $seed $family: draft block=$block harvest=$harvest rc=$rc $(tail -1 "$work/$seed.$family.draft")"
    if [[ $rc -ne 0 ]]; then cat "$work/$seed.$family.draft"; echo "FAIL: seed $seed $family speculative"; fail=1; fi
  done < <(grep -E "^(dspark|dflash) /" "$work/$seed.case")
done
[[ $fail -eq 0 ]] && rm -rf "$work" && echo "1 passed, 0 failed"
exit $fail
