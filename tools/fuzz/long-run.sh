#!/usr/bin/env bash
# The long fuzzing run: every libFuzzer target of the sanitizer build for RUNS executions (default
# 10 million) from its seed corpus, niced, one after the other; writes the record (machine, commit,
# command, executions, time, coverage, findings) to bench/results/fuzz-long-<date>.txt. A finding
# stops that target and keeps its input under OUT/; copy it to fuzz/regressions/<target>/ once
# fixed, so shell.fuzz_smoke replays it forever.
# SECONDS_PER_TARGET bounds each target's wall time as well (libFuzzer -max_total_time; 0 = none),
# for machines where RUNS executions do not fit; the record then shows how many ran.
#   tools/fuzz/long-run.sh [RUNS] [TARGET...]        (env: BUILD_DIR, OUT, SECONDS_PER_TARGET)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
san="${BUILD_DIR:-$root/build}/san"
runs="${1:-10000000}"
max_seconds="${SECONDS_PER_TARGET:-0}"
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then for f in "$root"/fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done; fi
out="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/memra-fuzz.XXXXXX")}"
record="$root/bench/results/fuzz-long-$(date +%Y-%m-%d).txt"
{
  echo "# memra libFuzzer long run ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
  echo "machine: $(uname -srm), $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "compiler: $(clang++ --version | head -1)"
  echo "commit: $(git -C "$root" rev-parse HEAD)$(git -C "$root" diff --quiet HEAD -- lib fuzz || echo ' (with uncommitted changes)')"
  echo "command: nice -n 19 build/san/fuzz_<target> -runs=$runs -max_total_time=$max_seconds -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 CORPUS fuzz/corpus/<target>"
  echo "sanitizers: address, undefined (no recover), leak; coverage: libFuzzer inline 8-bit counters + cmp tracing"
  echo
} >> "$record"
for t in "${targets[@]}"; do
  name="${t#fuzz_}"
  [[ -x "$san/$t" ]] || { echo "$t: not built in $san (build the sanitizer build first)" >> "$record"; continue; }
  mkdir -p "$out/$name"
  start=$(date +%s)
  nice -n 19 "$san/$t" -runs="$runs" -max_total_time="$max_seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$t-" \
    "$out/$name" "$root/fuzz/corpus/$name" > "$out/$t.log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$out/$t.log" | tail -1)
  verdict=$([[ $rc -eq 0 ]] && echo "no crash, leak or UB" || echo "FINDING (exit $rc): $(grep -m1 -E 'ERROR|runtime error' "$out/$t.log")")
  echo "$t: ${execs:-?} executions in ${secs} s ($(( ${execs:-0} / (secs > 0 ? secs : 1) ))/s), $cov, corpus $(ls "$out/$name" | wc -l) inputs: $verdict" >> "$record"
done
echo "wrote $record (logs and corpora under $out)" >&2
