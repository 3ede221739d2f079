#!/usr/bin/env bash
# shell.oracle_draw: test/shell/lib/oracle_draw.sh, which the fresh-seed oracle tests share: a drawn
# seed whose oracle case is ambiguous (exit 3: transformers' own forwards part at a near tie) is
# replaced by the next seed, at most three times; any other failure, and a seed the user gave, is
# returned as it is. (A stand-in MAKE, no oracle venv needed.)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/oracle_draw.sh"
fail=0
check() {  # check WHAT WANT_RC WANT_SEED GOT_RC
  if [[ $4 -eq $2 && $seed -eq $3 ]]; then echo "ok: $1 (rc $4, seed $seed)"; else echo "FAIL: $1: rc $4 seed $seed, want rc $2 seed $3"; fail=1; fi
}
ambiguous_below=0
make() { (( seed < ambiguous_below )) && return 3; [[ $seed -eq 66 ]] && return 1; return 0; }
seed=10 ambiguous_below=12; draw_oracle_case 1 make > /dev/null; check "two ambiguous seeds redrawn" 0 12 $?
seed=10 ambiguous_below=12; draw_oracle_case 0 make > /dev/null; check "a given seed is kept" 3 10 $?
seed=10 ambiguous_below=99; draw_oracle_case 1 make > /dev/null; check "three redraws at most" 3 13 $?
seed=64 ambiguous_below=66; draw_oracle_case 1 make > /dev/null; check "another failure is returned, not redrawn" 1 66 $?
seed=20 ambiguous_below=0; draw_oracle_case 1 make > /dev/null; check "a good seed runs once" 0 20 $?
seed=30 ambiguous_below=31
out=$(draw_oracle_case 1 make)
grep -q "seed 30: transformers' float32 forwards part at a near tie.*drawing seed 31" <<<"$out" || { echo "FAIL: the redraw is not said: $out"; fail=1; }
exit $fail
