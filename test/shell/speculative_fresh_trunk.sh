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
venv="${MEMRA_VENV:-$HOME/.cache/memra/venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "FAIL: no oracle venv at $venv; run $src/tools/oracle/setup-venv.sh"
  exit 1
fi
seed="${MEMRA_TRUNK_SEED:-$(( $(date +%s%N) / 1000 % 1000000007 ))}"
echo "seed: $seed (replay: MEMRA_TRUNK_SEED=$seed)"
work="$(mktemp -d "${MEMRA_BUILD:-/tmp}/spec_fresh.XXXXXX")"
export CUDA_VISIBLE_DEVICES=
if ! "$venv/bin/python" "$src/tools/oracle/make_checkpoint.py" --preset random --seed "$seed" --vocab 6 --out "$work/trunk" > "$work/trunk.log" 2>&1; then
  cat "$work/trunk.log"; echo "FAIL: the oracle could not make the trunk"; exit 1
fi
if ! MEMRA_PYTHON="$venv/bin/python" "$src/tools/oracle/fresh_drafter_case.sh" "$seed" "$work/case" "$work/trunk" > "$work/case.out" 2>&1; then
  cat "$work/case.out"; echo "FAIL: the oracle could not make the drafters"; exit 1
fi
geometry=$(python3 -c "
import json; c = json.load(open('$work/trunk/config.json'))
print(f\"layers={c.get('num_hidden_layers')} window={c.get('sliding_window')} vocab={c.get('vocab_size')} \"
      f\"ratios={c.get('compress_ratios')}\")")
echo "trunk: $geometry"
vocab=$(python3 -c "import json; print(json.load(open('$work/trunk/config.json'))['vocab_size'])")
python3 -c "import random; r=random.Random($seed); print(' '.join(str(r.randrange(2,$vocab)) for _ in range(12)))" > "$work/prompt"
fail=0 runs=0 accepted_runs=0
while read -r family drafter dump; do
  for harvest in dflash dspark; do
    for block in 2 7 16; do
      "$bin" -q draft "$work/trunk" --drafter "$drafter" --tokens "$work/prompt" --steps 40 --ignore-eos \
        --block-size "$block" --harvest "$harvest" --json > "$work/$family.$harvest.$block.json" 2> "$work/$family.$harvest.$block.err"
      rc=$?
      runs=$((runs + 1))
      tau=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j.get('tau', j.get('speculative', {}).get('tau', '?')))" "$work/$family.$harvest.$block.json" 2>/dev/null || echo '?')
      echo "$family harvest=$harvest block=$block: rc=$rc tau=$tau"
      python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 1 else 1)" "$tau" 2>/dev/null && accepted_runs=$((accepted_runs + 1))
      if [[ $rc -ne 0 ]]; then
        cat "$work/$family.$harvest.$block.err"
        echo "FAIL: $family harvest=$harvest block=$block (seed $seed, files kept in $work)"
        fail=1
      fi
    done
  done
done < <(grep -E "^(dspark|dflash) /" "$work/case.out")
# A 6-token vocabulary makes random drafts match now and then: partial acceptances, so the rollback
# of a partly accepted block runs, not only the all-rejected path.
if [[ $accepted_runs -eq 0 ]]; then echo "FAIL: no run accepted a draft (tau 1 everywhere): the partial-acceptance path never ran"; fail=1; fi
if [[ $runs -ne 12 ]]; then echo "FAIL: $runs draft runs, expected 12 (2 families x 2 harvests x 3 blocks)"; fail=1; fi
[[ $fail -eq 0 ]] && rm -rf "$work" && echo "1 passed, 0 failed"
exit $fail
