#!/usr/bin/env bash
# shell.fuzz_smoke: every libFuzzer target of the sanitizer build (build/san/fuzz_*) first replays its
# regression inputs (fuzz/regressions/<target>/: inputs that once crashed, kept as tests), then
# fuzzes for a bounded time from its seed corpus (fuzz/corpus/<target>/). Any crash, leak, UB or
# timeout fails the test and prints the input. Budget: MEMRA_FUZZ_SECONDS per target (default 12).
# The long runs (>= 10 million executions per target) are tools/fuzz/long-run.sh.
# Env (set by CTest): MEMRA_SAN_DIR, MEMRA_SRC.
set -uo pipefail

san="${MEMRA_SAN_DIR:-}"
src="${MEMRA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
seconds="${MEMRA_FUZZ_SECONDS:-12}"
targets=()
for f in "$src"/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
[[ -x "$san/${targets[0]}" ]] || { echo "skip: no sanitizer build ($san; it needs clang++)"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/fuzz_smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="detect_leaks=1"
fails=0
for t in "${targets[@]}"; do
  name="${t#fuzz_}"
  exe="$san/$t"
  [[ -x "$exe" ]] || { echo "FAIL: $t was not built"; fails=$((fails + 1)); continue; }
  [[ -d "$src/fuzz/corpus/$name" ]] || { echo "FAIL: $t has no seed corpus fuzz/corpus/$name"; fails=$((fails + 1)); continue; }
  regressions=("$src/fuzz/regressions/$name"/*)
  if [[ -e "${regressions[0]}" ]]; then
    if "$exe" "${regressions[@]}" > "$work/$t.replay" 2>&1; then
      echo "ok: $t replays ${#regressions[@]} regression inputs"
    else
      echo "FAIL: $t crashes on a regression input"; tail -40 "$work/$t.replay"; fails=$((fails + 1))
    fi
  fi
  mkdir -p "$work/$name"
  cp "$src/fuzz/corpus/$name"/* "$work/$name/"
  if "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$work/$t-" "$work/$name" > "$work/$t.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$')
    echo "ok: $t ${seconds} s, ${runs:-?} executions, no finding"
  else
    echo "FAIL: $t found a problem:"; grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$work/$t.log" | head -20
    for a in "$work/$t-"*; do [[ -f "$a" ]] && { echo "input ($a):"; head -c 600 "$a" | od -c | head -20; }; done
    fails=$((fails + 1))
  fi
done
echo "$fails failures"
[[ $fails -eq 0 ]]
