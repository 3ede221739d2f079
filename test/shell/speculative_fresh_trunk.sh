#!/usr/bin/env bash
# shell.speculative_fresh_trunk: lossless speculative decoding on a FRESH trunk checkpoint (random
# geometry from make_checkpoint.py --preset random with a 6-token vocabulary so that random drafts
# are sometimes accepted; a new seed every run, printed so a failure can be replayed with
# MEMRA_TRUNK_SEED) with fresh random drafters of both families made for it
# (fresh_drafter_case.sh): for block sizes 2, 7 and 16 and both harvest conventions, `memra draft`
# must emit exactly plain greedy's tokens (it exits 1 otherwise) across the trunk's compression
# boundaries and window wraps (40 steps after a 12-token prompt).
# Needs the oracle venv; without it the test FAILS, it does not skip.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
source "$src/test/shell/lib/oracle.sh"
seed="${MEMRA_TRUNK_SEED:-$(( $(date +%s%N) / 1000 % 1000000007 ))}"
echo "seed: $seed (replay: MEMRA_TRUNK_SEED=$seed)"
work="$(mktemp -d "${MEMRA_BUILD:-/tmp}/spec_fresh.XXXXXX")"
export CUDA_VISIBLE_DEVICES=
fail=0 runs=0 accepted_runs=0
# Random drafts on a 6-token vocabulary are usually, not always, accepted now and then; trunks
# seed, seed+1, ... are tried until one run accepts a draft (at most 4), every run checked lossless.
for attempt in 0 1 2 3; do
  tseed=$((seed + attempt))
  mkdir -p "$work/$attempt"
  if ! "$venv/bin/python" "$src/tools/oracle/make_checkpoint.py" --preset random --seed "$tseed" --vocab 6 --out "$work/$attempt/trunk" > "$work/$attempt/trunk.log" 2>&1; then
    cat "$work/$attempt/trunk.log"; echo "FAIL: the oracle could not make the trunk"; exit 1
  fi
  if ! MEMRA_PYTHON="$venv/bin/python" "$src/tools/oracle/fresh_drafter_case.sh" "$tseed" "$work/$attempt/case" "$work/$attempt/trunk" > "$work/$attempt/case.out" 2>&1; then
    cat "$work/$attempt/case.out"; echo "FAIL: the oracle could not make the drafters"; exit 1
  fi
  # the trunk's geometry, and a prompt of 12 ids from its vocabulary
  python3 -c "
import json, random; c = json.load(open('$work/$attempt/trunk/config.json')); r = random.Random($tseed)
print(f\"trunk (seed $tseed): layers={c.get('num_hidden_layers')} window={c.get('sliding_window')} vocab={c['vocab_size']}\")
open('$work/$attempt/prompt', 'w').write(' '.join(str(r.randrange(2, c['vocab_size'])) for _ in range(12)) + '\\n')"
  while read -r family drafter dump; do
    for harvest in dflash dspark; do
      for block in 2 7 16; do
        "$bin" -q draft "$work/$attempt/trunk" --drafter "$drafter" --tokens "$work/$attempt/prompt" --steps 40 --ignore-eos \
          --block-size "$block" --harvest "$harvest" --json > "$work/$attempt/$family.$harvest.$block.json" 2> "$work/$attempt/$family.$harvest.$block.err"
        rc=$?
        runs=$((runs + 1))
        tau=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tau'])" "$work/$attempt/$family.$harvest.$block.json" 2>/dev/null || echo '?')
        echo "$family harvest=$harvest block=$block: rc=$rc tau=$tau"
        [[ "$tau" != "?" ]] && awk -v t="$tau" 'BEGIN { exit !(t > 1) }' && accepted_runs=$((accepted_runs + 1))
        if [[ $rc -ne 0 ]]; then
          cat "$work/$attempt/$family.$harvest.$block.err"
          echo "FAIL: $family harvest=$harvest block=$block (trunk seed $tseed, files kept in $work)"
          fail=1
        fi
      done
    done
  done < <(grep -E "^(dspark|dflash) /" "$work/$attempt/case.out")
  [[ $fail -ne 0 || $accepted_runs -gt 0 ]] && break
done
# A 6-token vocabulary makes random drafts match now and then: partial acceptances, so the rollback
# of a partly accepted block runs, not only the all-rejected path.
if [[ $accepted_runs -eq 0 ]]; then echo "FAIL: no run accepted a draft (tau 1 everywhere): the partial-acceptance path never ran"; fail=1; fi
if (( runs == 0 || runs % 12 != 0 )); then echo "FAIL: $runs draft runs, expected 12 per trunk (2 families x 2 harvests x 3 blocks)"; fail=1; fi
[[ $fail -eq 0 ]] && rm -rf "$work" && echo "1 passed, 0 failed"
exit $fail
